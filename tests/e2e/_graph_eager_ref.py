# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Eager reference and shared helpers for the graph-mode parity tests (test_graph_*.py).

Run as a script in its own process (one engine per process): argv = model_path, json list
of prompts, max_tokens, max_num_batched_tokens ("0" = ENGINE_KWARGS'). Prints one line
``EAGER_TOKENS <json>``: greedy token ids per prompt, from ``enforce_eager=True``.

Imported by the tests: :func:`eager_tokens` runs the script once per distinct argument set
and caches the result for the pytest process, so several graph-mode modules share one
eager engine start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# the graph modules' prompts; the last one is longer than 64 tokens (chunked prefill)
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Water boils at",
    "The three primary colors are",
    "In 1969, astronauts",
    "A haiku about autumn:",
    "The largest planet in the solar system",
    "To make a cup of tea, first",
    "Photosynthesis is the process",
]
LONG_PROMPT = (
    "Photosynthesis is the process by which green plants, algae and some bacteria turn light "
    "energy into chemical energy. In the light-dependent reactions, which take place in the "
    "thylakoid membranes of the chloroplast, water is split, oxygen is released, and the energy "
    "carriers ATP and NADPH are made. In the light-independent reactions, also called the Calvin "
    "cycle, the plant uses ATP and NADPH to fix carbon dioxide from the air into sugars. In short,"
)
BATCHES = [1, 3, 5, 9]
MAX_TOKENS = 8
CAPTURE_SIZES = [1, 2, 4, 8, 16]
#: the common engine settings of the graph-mode modules and their eager reference.
#: ``max_num_batched_tokens`` 512 (vLLM's default is 8192) sizes the compiled profiling pass
#: (``GPUModelRunner.profile_run``, vllm/v1/worker/gpu_model_runner.py) that a graph-mode engine
#: runs at start-up: a 8192-token forward took ~45 s of each such engine on the 2-core CI box; no
#: step of these modules schedules more than 512 tokens, so the tokens are unchanged.
ENGINE_KWARGS = dict(dtype="float32", max_model_len=512, max_num_seqs=16, max_num_batched_tokens=512,
                     gpu_memory_utilization=0.5)

_cache: dict[tuple, list[list[int]]] = {}


def eager_tokens(model_path: str, prompts: list[str], max_tokens: int,
                 max_num_batched_tokens: int | None = None) -> list[list[int]]:
    """Greedy tokens per prompt from an eager engine in a subprocess (cached per arguments)."""
    key = (model_path, tuple(prompts), max_tokens, max_num_batched_tokens)
    if key not in _cache:
        res = subprocess.run(
            [sys.executable, os.path.abspath(__file__), model_path, json.dumps(prompts),
             str(max_tokens), str(max_num_batched_tokens or 0)],
            capture_output=True, text=True, timeout=1800,
        )
        line = [ln for ln in res.stdout.splitlines() if ln.startswith("EAGER_TOKENS ")]
        assert line, res.stderr[-3000:]
        _cache[key] = json.loads(line[-1][len("EAGER_TOKENS "):])
    return _cache[key]


def graph_llm(model_path: str, mode: str, **overrides):
    """A graph-mode engine (``cudagraph_mode`` = ``mode``) with the shared settings.

    ``VLLM_DISABLE_COMPILE_CACHE=1`` is set for its start so the passes run instead of a
    cached artifact (vLLM's AOT cache is keyed on the config, not on our passes' code).
    """
    from vllm import LLM

    saved = os.environ.get("VLLM_DISABLE_COMPILE_CACHE")
    os.environ["VLLM_DISABLE_COMPILE_CACHE"] = "1"
    try:
        return LLM(model=model_path, **{**ENGINE_KWARGS, **overrides},
                   compilation_config={"cudagraph_mode": mode,
                                       "cudagraph_capture_sizes": CAPTURE_SIZES})
    finally:
        if saved is None:
            os.environ.pop("VLLM_DISABLE_COMPILE_CACHE", None)
        else:
            os.environ["VLLM_DISABLE_COMPILE_CACHE"] = saved


def engine_wrappers(llm, runtime_mode=None, role=None) -> list:
    """This engine's ACLGraphWrappers (optionally of one runtime mode) that captured graphs:
    the target model's (``role`` None) or the draft model's (``role="draft"``: vLLM 0.34's
    speculator graphs, ``vllm_ascend_graph.mrv2_spec_manager``, marked ``graph_role``)."""
    from vllm_ascend_graph.wrapper import ACLGraphWrapper

    cfg = llm.llm_engine.vllm_config
    return [w for w in list(ACLGraphWrapper._all_instances)
            if w.entries and w.vllm_config is cfg and w.__dict__.get("graph_role") == role
            and (runtime_mode is None or w.runtime_mode == runtime_mode)]


def rank_graph_entries(llm) -> list[list[tuple[str, int, bool, int]]]:
    """Per worker rank, ``(runtime mode, num_tokens, has_lora, replays)`` of every graph it
    captured: :func:`engine_wrappers`' selection, taken in each worker through vLLM's
    ``collective_rpc`` (``vllm/v1/executor/multiproc_executor.py``), which hands the function
    the worker. Under TP > 1 the ranks' graphs live in the worker processes, not here.
    The function is local so that cloudpickle sends it by value (workers need not import us)."""

    def entries(worker):
        from vllm_ascend_graph.wrapper import ACLGraphWrapper

        cfg = worker.vllm_config
        # vLLM 0.34's descriptors count the active adapters (BatchDescriptor,
        # vllm/forward_context.py; BatchExecutionDescriptor, vllm/v1/worker/gpu/cudagraph_utils.py)
        def has_lora(d):
            return d.num_active_loras > 0

        return [(w.runtime_mode.name, d.num_tokens, has_lora(d), e.num_replays)
                for w in list(ACLGraphWrapper._all_instances) if w.entries and w.vllm_config is cfg
                and w.__dict__.get("graph_role") is None  # the target's (no draft graphs)
                for d, e in w.entries.items()]

    return llm.collective_rpc(entries)


def replays(wrappers) -> int:
    """Replays so far over ``wrappers``."""
    return sum(e.num_replays for w in wrappers for e in w.entries.values())


def greedy(llm, prompts: list[str], max_tokens: int = MAX_TOKENS, **kw) -> list:
    from vllm import SamplingParams

    return llm.generate(prompts, SamplingParams(temperature=0, max_tokens=max_tokens, **kw),
                        use_tqdm=False)


if __name__ == "__main__":
    os.environ["VLLM_ASCEND_EMULATE"] = "1"
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ["HF_HUB_OFFLINE"] = "1"
    from vllm import LLM, SamplingParams

    path, prompts, max_tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    mbt = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    extra = {"max_num_batched_tokens": mbt} if mbt else {}
    llm = LLM(model=path, enforce_eager=True, **{**ENGINE_KWARGS, **extra})
    outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=max_tokens))
    print("EAGER_TOKENS " + json.dumps([list(o.outputs[0].token_ids) for o in outs]))
