# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""SmolLM2-135M-Instruct in simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``, float16).

The whole NPU code path of the plugin runs on CPU over ``ascend_ops.simulator``
(docs/simulated-npu.md): torch_npu operators with their published schemas and constraints, ACL
graphs captured and replayed by the simulated ``NPUGraph``, attention parameters updated per
replay through ``graph_task_update``. Two child processes build three engines: the eager one
alone (its checks do not depend on the graph layer, so they run on every vLLM line's runner),
then the two graph ones in turn:

* ``eager``: ``enforce_eager=True``;
* ``graph``: vLLM's default execution mode (FULL_AND_PIECEWISE; capture sizes 1, 2, ... 64:
  FULL graphs for uniform decode up to ``max_num_seqs`` 8, PIECEWISE for mixed steps);
* ``graph_no_update``: the graph engine with ``VLLM_ASCEND_GRAPH_PARAM_UPDATE=0`` (negative
  control).

The 8 prompts have different lengths (5 to ~100 tokens) and ``max_tokens``; prompts are
prefilled in chunks of up to 64 tokens next to running decodes, and requests finish at different
steps, so the batch changes size (between capture sizes too: the test checks FULL replays of
batches that are not a capture size) and composition during the run. Checks: graph == eager
token for token;
eager agrees with HF transformers float32 teacher-forced at >= 97 % of generated positions;
without the per-replay parameter update the first FULL replay hangs on its attention layers'
ExternalEvent (nothing records it), which the asynchronous simulated device reports.
"""

from __future__ import annotations

import pytest
from _sim_npu import assert_agreement, run_child, teacher_forced

MAX_TOKENS = [3, 5, 7, 9, 11, 13, 6, 10]
CAPTURE_SIZES = [1, 2, 4, 8, 16, 32, 64]
FULL_SIZES = [1, 2, 4, 8]  # FULL (uniform decode) graphs stop at max_num_seqs
ENGINE = dict(dtype="float16", max_model_len=512, max_num_seqs=8, max_num_batched_tokens=64,
              enable_chunked_prefill=True, gpu_memory_utilization=0.5)
GRAPH = dict(compilation_config={"cudagraph_capture_sizes": CAPTURE_SIZES})


@pytest.fixture(scope="module")
def prompts(prompt_ids) -> list[list[int]]:
    return prompt_ids[: len(MAX_TOKENS)]


@pytest.fixture(scope="module")
def eager_run(model_path, prompts, tmp_path_factory) -> dict:
    spec = {"model": model_path, "prompts": prompts, "max_tokens": MAX_TOKENS, "engine": ENGINE,
            "runs": [{"name": "eager", "engine": {"enforce_eager": True}}]}
    return run_child(spec, tmp_path_factory.mktemp("sim_smollm2_eager"))["eager"]


@pytest.fixture(scope="module")
def runs(model_path, prompts, tmp_path_factory, eager_run) -> dict:
    spec = {
        "model": model_path, "prompts": prompts, "max_tokens": MAX_TOKENS, "engine": ENGINE,
        "runs": [
            {"name": "graph", "engine": GRAPH},
            {"name": "graph_no_update", "engine": GRAPH, "expect_error": True,
             "env": {"VLLM_ASCEND_GRAPH_PARAM_UPDATE": "0"}},
        ],
    }
    return {"eager": eager_run, **run_child(spec, tmp_path_factory.mktemp("sim_smollm2"))}


@pytest.mark.sim_only
def test_ran_on_the_simulated_npu_path(runs):
    for name in ("eager", "graph"):
        facts = runs[name]["facts"]
        assert facts["simulated"], name
        assert facts["backends"] == ["npu"], f"{name}: ops ran on {facts['backends']}"
    graph = runs["graph"]["facts"]
    assert graph["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert graph["full_sizes"] == FULL_SIZES
    assert graph["full_replays"] > 0
    between = set(graph["full_replay_tokens"]) - set(FULL_SIZES)
    assert between, f"no FULL replay of a padded batch: {graph['full_replay_tokens']}"
    assert graph["sim_replays"] > 0, "the simulated NPUGraph replayed nothing"
    assert runs["eager"]["facts"]["cudagraph_mode"] == "NONE"


def test_graph_tokens_equal_eager(runs):
    eager, graph = runs["eager"]["tokens"], runs["graph"]["tokens"]
    assert [len(t) for t in eager] == MAX_TOKENS
    for k, (e, g) in enumerate(zip(eager, graph, strict=True)):
        assert g == e, f"prompt {k}: graph {g} != eager {e}"


@pytest.mark.sim_only
def test_eager_ran_on_the_simulated_npu_path(eager_run):
    facts = eager_run["facts"]
    assert facts["simulated"] and facts["backends"] == ["npu"], facts["backends"]
    assert facts["cudagraph_mode"] == "NONE"


def test_eager_agrees_with_hf_teacher_forced(eager_run, model_path, prompts):
    result = teacher_forced(model_path, prompts, eager_run["tokens"])
    assert_agreement(result, "SmolLM2 float16 simulated NPU vs HF float32")


def test_graph_without_param_update_hangs(runs):
    """Negative control: without the per-replay parameter update nothing records the attention
    layers' ExternalEvents, so the first FULL replay's captured wait never returns (torch_npu
    ExternalEvent: only a record sets it); the asynchronous simulated device reports the hang.
    If it did not, the graph test above could not see a missing parameter update."""
    error = runs["graph_no_update"]["error"]
    assert error is not None, "a FULL replay without parameter updates ran to completion"
    assert "device hang: ExternalEvent" in error, error
