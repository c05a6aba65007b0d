"""ACL graph mode (PIECEWISE capture + Ascend compile backend with fusion passes) == eager.

Case C-19 / issue 6: greedy tokens for batch sizes 1, 3, 5 and 9 equal eager mode on
SmolLM2-135M-Instruct (float32). One engine in this module (graph mode); the eager
reference runs in a subprocess with ``enforce_eager=True``.

The platform side of the graph contract is prototyped here by patching NPUPlatform's
hooks and NPUWorker's warm-up in this process (until the integrator lands them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

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
BATCHES = [1, 3, 5, 9]
MAX_TOKENS = 8
CAPTURE_SIZES = [1, 2, 4, 8, 16]


@pytest.fixture(scope="module")
def graph_llm(model_path):
    mp = pytest.MonkeyPatch()
    mp.setenv("VLLM_DISABLE_COMPILE_CACHE", "1")  # passes must run, not a cached artifact
    from vllm import LLM

    llm = LLM(model=model_path, dtype="float32", max_model_len=512, max_num_seqs=16,
              gpu_memory_utilization=0.5,
              compilation_config={"cudagraph_mode": "PIECEWISE",
                                  "cudagraph_capture_sizes": CAPTURE_SIZES})
    yield llm
    mp.undo()


@pytest.fixture(scope="module")
def eager_tokens(model_path):
    here = os.path.dirname(__file__)
    res = subprocess.run(
        [sys.executable, os.path.join(here, "_graph_eager_ref.py"), model_path,
         json.dumps(PROMPTS), str(MAX_TOKENS)],
        capture_output=True, text=True, timeout=1800,
    )
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("EAGER_TOKENS ")]
    assert line, res.stderr[-3000:]
    return json.loads(line[-1][len("EAGER_TOKENS "):])


def test_capture_sizes_and_wrappers(graph_llm):
    from vllm.config import CUDAGraphMode
    from vllm_ascend_graph.wrapper import ACLGraphWrapper

    comp = graph_llm.llm_engine.vllm_config.compilation_config
    assert comp.cudagraph_mode == CUDAGraphMode.PIECEWISE
    assert comp.cudagraph_capture_sizes == [1, 2, 4, 8, 16]
    wrappers = [w for w in ACLGraphWrapper._all_instances if w.entries]
    # SmolLM2-135M: 30 decoder layers -> 31 pieces between attention ops, each captured per size
    assert len(wrappers) == 31
    assert all(len(w.entries) == len(CAPTURE_SIZES) for w in wrappers)


@pytest.mark.parametrize("batch", BATCHES)
def test_greedy_tokens_equal_eager(graph_llm, eager_tokens, batch):
    from vllm import SamplingParams
    from vllm_ascend_graph.wrapper import ACLGraphWrapper

    before = sum(e.num_replays for w in ACLGraphWrapper._all_instances for e in w.entries.values())
    outs = graph_llm.generate(PROMPTS[:batch], SamplingParams(temperature=0, max_tokens=MAX_TOKENS))
    after = sum(e.num_replays for w in ACLGraphWrapper._all_instances for e in w.entries.values())
    assert after > before  # decode steps replayed captured graphs
    assert [list(o.outputs[0].token_ids) for o in outs] == eager_tokens[:batch]
