"""NPU branch of the MoE ops on CPU, through the fake torch_npu that enforces the torch-npu 2.13.0
wheel's published schemas (npu_moe_gating_top_k, npu_moe_init_routing, npu_moe_finalize_routing,
npu_grouped_matmul), compared with the references."""

from __future__ import annotations

import sys

import ascend_ops
import pytest
import torch
from moe_samples import run_moe_ops
from npu_contract import FakeTorchNpu, find_or_download_wheel, published_schemas
from npu_kernels import KERNELS
from npu_kernels_moe import MOE_KERNELS


@pytest.fixture(scope="module")
def moe_fake():
    wheel, reason = find_or_download_wheel()
    if wheel is None:
        pytest.skip(f"torch-npu wheel unavailable, NPU contract not checked: {reason}")
    return FakeTorchNpu(*published_schemas(wheel), {**KERNELS, **MOE_KERNELS})


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_npu_branch_of_moe_ops_matches_reference(moe_fake, monkeypatch, dtype):
    monkeypatch.setitem(sys.modules, "torch_npu", moe_fake.module)
    moe_fake.calls.clear()
    ascend_ops.reset_call_counts()
    with ascend_ops.use_backend("npu"):
        results = run_moe_ops(dtype)
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=3e-2, rtol=3e-2)
    for name, (got, expect) in results.items():
        torch.testing.assert_close(got, expect, **tol, msg=lambda m, name=name: f"{name}: {m}")
    assert moe_fake.called() == set(MOE_KERNELS)
    counts = ascend_ops.call_counts(per_backend=True)
    assert all(counts[(op, "npu")] >= 1 for op in ("moe_gating_top_k", "moe_init_routing",
                                                     "moe_finalize_routing", "grouped_matmul"))


def test_fake_rejects_wrong_grouped_matmul_mode(moe_fake):
    with pytest.raises(NotImplementedError, match="group_list_type"):
        moe_fake.module.npu_grouped_matmul([torch.randn(2, 3)], [torch.randn(1, 3, 2)],
                                           group_list=torch.tensor([2]), split_item=2, group_type=0,
                                           group_list_type=0)


def test_fake_rejects_schema_violation(moe_fake):
    with pytest.raises(Exception, match="k_group|argument"):
        moe_fake.module.npu_moe_gating_top_k(torch.randn(2, 4), 1, k_group="two")
