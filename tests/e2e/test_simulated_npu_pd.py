# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Prefill-decode disaggregation through ``ExampleConnector`` on the simulated NPU
(docs/pd-disaggregation.md): the emulation test's producer and consumer
(test_pd_disaggregation.py) in a simulated-NPU child (``_sim_npu_child.py``), SmolLM2 float16,
eager, vLLM 0.34's Model Runner V2.

Checks: every op ran its NPU branch over the simulator; the producer saved the prompts' blocks
through ``ascend_ops.read_kv_blocks`` and the consumer loaded them through
``ascend_ops.write_kv_blocks`` (the layout seam's NPU calls); the consumer's greedy tokens equal
the producer's (one instance's) and it reports the transferred prompt tokens as cached.
"""

from __future__ import annotations

import pytest
from _sim_npu import run_child
from packaging.version import Version

vllm = pytest.importorskip("vllm")
if Version(Version(str(vllm.__version__)).base_version) < Version("0.34"):
    pytest.skip("KV connectors are served on vLLM >= 0.34 (Model Runner V2)",
                allow_module_level=True)

BLOCK = 128
PROMPTS = [list(range(1000, 1200)), list(range(3000, 3300))]
ENGINE = dict(dtype="float16", max_model_len=512, enforce_eager=True, gpu_memory_utilization=0.5)


def _kv(role: str, path: str) -> dict:
    return {"kv_connector": "ExampleConnector", "kv_role": role,
            "kv_connector_extra_config": {"shared_storage_path": path}}


@pytest.fixture(scope="module")
def result(model_path, tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("pd_sim")
    shared = str(work / "kv")
    spec = {"model": model_path, "prompts": PROMPTS, "max_tokens": [6, 6], "engine": ENGINE,
            "runs": [{"name": role, "engine": {"kv_transfer_config": _kv(f"kv_{role}", shared)}}
                     for role in ("producer", "consumer")]}
    return run_child(spec, work, env={"VLLM_ASCEND_SKIP_VERSION_CHECK": "1"})


def test_consumer_loads_through_the_npu_seam_and_gives_the_producers_tokens(result):
    producer, consumer = result["producer"], result["consumer"]
    for run in (producer, consumer):
        assert run["facts"]["simulated"] and run["facts"]["backends"] == ["npu"]
    assert producer["facts"]["op_calls"].get("read_kv_blocks", 0) > 0
    assert consumer["facts"]["op_calls"].get("write_kv_blocks", 0) > 0
    assert consumer["tokens"] == producer["tokens"]
    assert producer["facts"]["num_cached_tokens"] == [0, 0]
    assert consumer["facts"]["num_cached_tokens"] == [(len(p) - 2) // BLOCK * BLOCK
                                                      for p in PROMPTS]
