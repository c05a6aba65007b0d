# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Proof that vLLM ran through our plugin: platform, worker, model runner and attention backend
classes are ours, the KV block size is our backend's preference, and the model's norm,
activation, rope, KV-write and attention paths executed ascend_ops ops (call counters)."""

from __future__ import annotations

import pytest
from engine import generate_ids

#: the runner the worker builds (worker/worker.py): Model Runner V2, the only runner of vLLM 0.34
RUNNER = "vllm_ascend_platform.worker.model_runner_v2.NPUModelRunnerV2"

EXPECTED_OPS = ("rms_norm", "swiglu", "rotary_embedding", "reshape_and_cache",
                "fused_infer_attention")


def _mro(obj) -> list[str]:
    cls = obj if isinstance(obj, type) else type(obj)
    return [f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__]


def _worker_facts(wrapper) -> dict:
    """Runs on the worker (collective_rpc): class names, attention backends, block size and the
    serving runner's block tables."""
    from vllm.platforms import current_platform

    worker = getattr(wrapper, "worker", wrapper)
    ctx = worker.vllm_config.compilation_config.static_forward_context
    backends = sorted({f"{layer.attn_backend.__module__}.{layer.attn_backend.__qualname__}"
                       for layer in ctx.values() if hasattr(layer, "attn_backend")})
    common = {"platform": _mro(current_platform), "worker": _mro(worker),
              "runner": _mro(worker.model_runner), "backends": backends,
              "block_size": worker.vllm_config.cache_config.block_size}
    return {**common, "block_tables": _mrv2_block_tables(worker.model_runner)}


def _mrv2_block_tables(runner) -> list[dict]:
    """MRv2 (vllm/v1/worker/gpu/block_table.py ``BlockTables``): one launch computes every
    group's slots; on the host vLLM's launch must end in our stand-in
    (host/mrv2_kernels.py, registered through vllm.triton_utils.dispatcher), and the serving
    runner's tables (built in ``initialize_kv_cache``) must be registered with it."""
    from vllm.v1.worker.gpu import block_table as bt
    from vllm_ascend_platform.host import mrv2_kernels

    # ours: the torch stand-in (host/mrv2_kernels.py; the simulated NPU's) or, in CPU emulation,
    # its numpy version (host/mrv2_kernels_np.py), each wrapped in HostLaunch
    kernel = bt._compute_slot_mappings_kernel
    impl = getattr(kernel, "_impl", kernel)
    direct = (isinstance(impl, mrv2_kernels.HostLaunch)
              and impl.__name__ == "_compute_slot_mappings"
              and impl.fn.__module__ in ("vllm_ascend_platform.host.mrv2_kernels",
                                         "vllm_ascend_platform.host.mrv2_kernels_np"))
    tables = runner.block_tables
    return [{"direct": direct, "host": t.data_ptr() in mrv2_kernels._POINTERS}
            for t in [b.gpu for b in tables.block_tables] + list(tables.input_block_tables)]


def _op_counts(wrapper) -> dict:
    import ascend_ops

    return dict(ascend_ops.call_counts())


@pytest.fixture(scope="module")
def llm(default_llm):
    """The default engine (conftest ``default_llm``), shared with the other modules using it."""
    return default_llm


@pytest.fixture(scope="module")
def facts(llm) -> dict:
    return llm.collective_rpc(_worker_facts)[0]


def test_platform_is_ours(facts):
    assert "vllm_ascend_platform.platform.NPUPlatform" in facts["platform"], facts["platform"]


def test_worker_and_runner_are_ours(facts):
    assert "vllm_ascend_platform.worker.worker.NPUWorker" in facts["worker"], facts["worker"]
    assert RUNNER in facts["runner"], facts["runner"]


def test_input_batch_of_the_serving_runner_is_adopted(facts):
    """The block tables the runner serves with (built for the KV cache's block sizes) compute
    slots through our host kernel: they are registered with the host stand-ins that vLLM's
    slot-mapping launch ends in (docs/model-runner-v2.md)."""
    assert facts["block_tables"], "no block table"
    assert all(t["direct"] and t["host"] for t in facts["block_tables"]), facts["block_tables"]


def test_attention_backend_is_ours(facts):
    assert facts["backends"], "no attention layer found in the static forward context"
    assert all(b.startswith("vllm_ascend_attention.") for b in facts["backends"]), facts["backends"]
    assert facts["block_size"] == 128  # the backend's preferred KV block size


def test_ascend_ops_ran_during_generation(llm, prompt_ids):
    before = llm.collective_rpc(_op_counts)[0]
    outs = generate_ids(llm, prompt_ids[:2], n=4)
    after = llm.collective_rpc(_op_counts)[0]
    assert all(len(o.outputs[0].token_ids) == 4 for o in outs)
    grew = {op: after.get(op, 0) - before.get(op, 0) for op in EXPECTED_OPS}
    assert all(n > 0 for n in grew.values()), f"op calls during generation: {grew}"
