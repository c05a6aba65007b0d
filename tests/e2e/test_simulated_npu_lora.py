# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multi-LoRA on SmolLM2-135M-Instruct in simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``,
float16): the LoRA products run through ``torch_npu.npu_batch_gather_matmul_`` on the simulated
torch_npu (docs/simulated-npu.md), inside captured ACL graphs.

Child processes (one engine each) build ``eager`` (enforce_eager) and ``graph``
(FULL_AND_PIECEWISE, capture sizes 1, 2, 4, 8). Each serves two rounds
of 8 prompts with three adapters and the base model mixed (``max_loras=3``) and different
``max_tokens``, so the set of active adapters changes between decode steps (requests finish)
and between rounds (the assignment is rotated). Checks: graph == eager token for token; each row
agrees with HF float32 with its own adapter merged by peft, teacher-forced, at
>= 95 % of positions (top-1 or within 0.05 nats); the adapters change the output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from _sim_npu import CHILD_TIMEOUT_S, HERE
from lora_adapters import make_adapter, teacher_forced_agreement

MAX_TOKENS = [3, 6, 9, 12, 4, 8, 10, 5]
CAPTURE_SIZES = [1, 2, 4, 8]
# max_num_batched_tokens 512 (the 8 prompts are 331 tokens): vLLM's profiling pass, which the
# simulated NPU runs at that size, is a 512-token forward instead of a 8192-token one
ENGINE = dict(dtype="float16", max_model_len=512, max_num_seqs=8, max_num_batched_tokens=512,
              gpu_memory_utilization=0.5, enable_lora=True, max_loras=3, max_lora_rank=16)
ASSIGN = [[None, "a1", "a2", "a3", "a1", None, "a3", "a2"],
          ["a3", None, "a1", "a2", "a2", "a3", None, "a1"]]


@pytest.fixture(scope="module")
def adapters(model_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("sim_lora")
    return {f"a{i}": make_adapter(model_path, root / f"a{i}", seed=10 + i) for i in (1, 2, 3)}


@pytest.fixture(scope="module")
def results(model_path, prompt_ids, adapters, tmp_path_factory):
    from _sim_npu_child import child_env

    def lora(name):
        return None if name is None else [name, int(name[1:]), adapters[name]]

    spec = {
        "model": model_path,
        "engine": ENGINE,
        "rounds": [{"prompts": prompt_ids, "max_tokens": MAX_TOKENS,
                    "loras": [lora(n) for n in names]} for names in ASSIGN],
        "runs": [
            {"name": "eager", "engine": {"enforce_eager": True}},
            {"name": "graph",
             "engine": {"compilation_config": {"cudagraph_capture_sizes": CAPTURE_SIZES}}},
        ],
    }
    # one child per engine (a process's simulated device keeps what earlier engines accounted),
    # both started at once: each spends most of its start-up on one core
    children = []
    try:
        for run in spec.pop("runs"):
            work = tmp_path_factory.mktemp(f"sim_lora_{run['name']}")
            (work / "spec.json").write_text(json.dumps({**spec, "runs": [run]}))
            with open(work / "child.log", "w") as log:
                proc = subprocess.Popen([sys.executable, str(HERE / "_sim_npu_lora_child.py"),
                                         str(work / "spec.json"), str(work / "out.json")],
                                        stdout=log, stderr=subprocess.STDOUT, env=child_env(),
                                        cwd=str(HERE))
            children.append((run["name"], work, proc))
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        results = {}
        for name, work, proc in children:
            try:
                rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                rc = "timeout"
            if rc != 0 or not (work / "out.json").exists():
                raise AssertionError(f"simulated-NPU LoRA child {name} failed (rc={rc}); log tail:\n"
                                     + (work / "child.log").read_text()[-6000:])
            results.update(json.loads((work / "out.json").read_text()))
    finally:
        for _, _, proc in children:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


@pytest.mark.sim_only
def test_lora_ran_on_the_npu_path_in_graphs(results):
    graph = results["graph"]["facts"]
    assert graph["simulated"] and graph["backends"] == ["npu"]
    assert graph["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert graph["full_replays"] > 0, "no decode step replayed a captured graph"


def test_graph_equals_eager_as_adapters_change(results):
    assert results["graph"]["tokens"] == results["eager"]["tokens"]


def test_rows_match_their_adapter_teacher_forced(results, model_path, adapters, prompt_ids,
                                                 oracle):
    from lora_adapters import MergedOracle

    by_adapter: dict[str | None, list] = {}
    for names, toks in zip(ASSIGN, results["eager"]["tokens"], strict=True):
        for name, p, gen in zip(names, prompt_ids, toks, strict=True):
            by_adapter.setdefault(name, []).append((p, gen))
    agreed = total = 0
    for name, rows in by_adapter.items():
        model = oracle.model if name is None else MergedOracle(model_path, adapters[name]).model
        a, t = teacher_forced_agreement(model, rows)
        agreed, total = agreed + a, total + t
    assert total == 2 * sum(MAX_TOKENS)
    assert agreed / total >= 0.95, f"{agreed}/{total} positions agree with HF float32"
    changed = sum(gen != oracle.greedy(p, len(gen)).tokens
                  for name, rows in by_adapter.items() if name for p, gen in rows)
    assert changed >= 8, f"only {changed} of 12 adapter rows differ from the base model"
