# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared fixtures: backend parametrization and small random paged-attention problems."""

from __future__ import annotations

import os

import ascend_ops
import pytest
import torch

try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=15, deadline=None, derandomize=True)
    settings.register_profile("dev", max_examples=60, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis is a test extra
    pass

CPU_BACKENDS = ["reference", "native"]


def pytest_configure(config):
    config.addinivalue_line("markers", "npu: needs a real Ascend NPU (deselected on CPU)")
    config.addinivalue_line("markers", "standalone: runs only when ASCEND_OPS_STANDALONE=1")
    config.addinivalue_line("markers", f"sim_only: asserts simulator-only facts; skipped under {REAL_NPU_ENV}=1")


#: scripts/npu_smoke.sh sets this on an NPU host: ``simulated_npu`` then yields the real torch_npu
REAL_NPU_ENV = "ASCEND_OPS_SIM_TIER_REAL_NPU"
SIM_ONLY_REASON = ("sim_only: asserts a simulator-only fact (ledger counts, SimulatedNpuError refusals, "
                   "the simulated runtime); meaningless with the real torch_npu")


def real_npu_tier() -> bool:
    """True when the simulated-NPU tier runs against the real torch_npu (scripts/npu_smoke.sh)."""
    return os.environ.get(REAL_NPU_ENV) == "1"


def pytest_collection_modifyitems(config, items):
    if real_npu_tier():
        for item in items:
            if item.get_closest_marker("sim_only"):
                item.add_marker(pytest.mark.skip(reason=SIM_ONLY_REASON))


@pytest.fixture(params=CPU_BACKENDS)
def backend(request):
    """Run the test body with each CPU backend forced (native skipped when _C is not built)."""
    if request.param == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built (editable install); native backend not testable here")
    with ascend_ops.use_backend(request.param):
        yield request.param


TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
}


def make_paged_problem(
    q_lens, kv_lens, num_heads, num_kv_heads, head_dim, block_size, dtype, seed=0, extra_blocks=3
):
    """Random TND query + K/V scattered into randomly permuted cache blocks.

    Returns dict with query, key_cache, value_cache, block_table (int32), query_start_loc (int32),
    seq_lens (int32) and the dense per-request K/V lists (for the naive oracle).
    """
    g = torch.Generator().manual_seed(seed)
    b = len(q_lens)
    blocks_per = [-(-kv // block_size) for kv in kv_lens]
    num_blocks = sum(blocks_per) + extra_blocks
    perm = torch.randperm(num_blocks, generator=g)
    max_blocks = max(blocks_per + [1])
    block_table = torch.zeros(b, max_blocks, dtype=torch.int32)
    key_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim, generator=g).to(dtype)
    value_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim, generator=g).to(dtype)
    dense_k, dense_v = [], []
    used = 0
    for i, kv in enumerate(kv_lens):
        ids = perm[used : used + blocks_per[i]]
        used += blocks_per[i]
        block_table[i, : blocks_per[i]] = ids.to(torch.int32)
        k = torch.randn(kv, num_kv_heads, head_dim, generator=g).to(dtype)
        v = torch.randn(kv, num_kv_heads, head_dim, generator=g).to(dtype)
        for j in range(kv):
            key_cache[ids[j // block_size], j % block_size] = k[j]
            value_cache[ids[j // block_size], j % block_size] = v[j]
        dense_k.append(k)
        dense_v.append(v)
    query = torch.randn(sum(q_lens), num_heads, head_dim, generator=g).to(dtype)
    qsl = torch.tensor([0, *torch.tensor(q_lens).cumsum(0).tolist()], dtype=torch.int32)
    return dict(
        query=query,
        key_cache=key_cache,
        value_cache=value_cache,
        block_table=block_table,
        query_start_loc=qsl,
        seq_lens=torch.tensor(kv_lens, dtype=torch.int32),
        dense_k=dense_k,
        dense_v=dense_v,
    )


def naive_attention(problem, scale, causal):
    """Per-request, per-token, per-head loop in float64 over the dense K/V (independent oracle)."""
    q = problem["query"].double()
    out = torch.zeros_like(q)
    qsl = problem["query_start_loc"].tolist()
    hq = q.shape[1]
    for b, (k, v) in enumerate(zip(problem["dense_k"], problem["dense_v"], strict=True)):
        kv_len = k.shape[0]
        q_len = qsl[b + 1] - qsl[b]
        group = hq // k.shape[1]
        for i in range(q_len):
            visible = kv_len - q_len + i + 1 if causal else kv_len
            for h in range(hq):
                kh = k[:visible, h // group].double()
                vh = v[:visible, h // group].double()
                p = torch.softmax((kh @ q[qsl[b] + i, h]) * scale, dim=0)
                out[qsl[b] + i, h] = p @ vh
    return out


def wheel_missing(exc: Exception) -> None:
    """Without the torch-npu wheel: fail under CI (``CI=true``), skip elsewhere; both say why."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI needs the torch-npu wheel: {exc}")
    pytest.skip(str(exc))


@pytest.fixture
def simulated_npu():
    """The simulated NPU installed for one test (uninstalled after), ledger zeroed; with
    ``ASCEND_OPS_SIM_TIER_REAL_NPU=1`` the real ``torch_npu`` instead (nothing installed).

    A missing torch-npu wheel fails the test under CI (``CI=true``) and skips it elsewhere, in
    both cases with the command that fetches the wheel (ascend_ops.simulator.schemas).
    """
    if real_npu_tier():
        import torch_npu  # the real one: scripts/npu_smoke.sh runs this tier on an NPU host

        yield torch_npu
        return
    from ascend_ops import simulator

    try:
        module = simulator.install(capacity_bytes=1 << 30, device_count=2)
    except simulator.SimulatedNpuError as exc:
        wheel_missing(exc)
    simulator.ledger().reset()
    try:
        yield module
    finally:
        simulator.uninstall()
