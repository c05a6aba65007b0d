"""The NPU branch of every op, run on CPU through a fake torch_npu that enforces the schemas
published in the torch-npu 2.13.0 wheel (DESIGN §4), compared with the references."""

from __future__ import annotations

import re
from pathlib import Path

import ascend_ops
import pytest
import torch
from ascend_ops import reference
from conftest import make_paged_problem
from npu_contract import (
    FakeTorchNpu,
    atb_prototype_to_schema,
    find_or_download_wheel,
    published_schemas,
)
from npu_kernels import KERNELS

PKG_ROOT = Path(__file__).resolve().parents[1]
OPERATOR_CALL = re.compile(r"torch\.ops\.(?:npu|atb)\.(\w+)|torch_npu(?:\(\))?\.(_?npu_\w+)")


@pytest.fixture(scope="session")
def schemas():
    wheel, reason = find_or_download_wheel()
    if wheel is None:
        pytest.skip(f"torch-npu wheel unavailable, NPU contract not checked: {reason}")
    return published_schemas(wheel)


@pytest.fixture(scope="session")
def fake_npu(schemas):
    return FakeTorchNpu(*schemas, KERNELS)


@pytest.fixture
def npu_branch(fake_npu, monkeypatch):
    """Route ops to the NPU branch with the fake torch_npu importable."""
    monkeypatch.setitem(__import__("sys").modules, "torch_npu", fake_npu.module)
    with ascend_ops.use_backend("npu"):
        yield fake_npu


def _run_all_ops(dtype):
    """Call every public op once; returns {op: (got, expected)} with the reference as oracle."""
    g = torch.Generator().manual_seed(0)
    r = {}
    x = torch.randn(4, 32, generator=g).to(dtype)
    res = torch.randn(4, 32, generator=g).to(dtype)
    w = torch.rand(32, generator=g).to(dtype)
    with ascend_ops.use_backend("npu"):
        r["rms_norm"] = (ascend_ops.rms_norm(x, w, 1e-6),)
        r["add_rms_norm"] = ascend_ops.add_rms_norm(x, res, w, 1e-6)
        r["swiglu"] = (ascend_ops.swiglu(x),)
    r["rms_norm"] += (reference.rms_norm(x, w, 1e-6),)
    r["add_rms_norm"] = (r["add_rms_norm"], reference.add_rms_norm(x, res, w, 1e-6))
    r["swiglu"] += (reference.swiglu(x),)

    pos = torch.tensor([3, 0, 7])
    q, k = torch.randn(3, 4 * 16, generator=g).to(dtype), torch.randn(3, 2 * 16, generator=g).to(dtype)
    cache = torch.randn(8, 8, generator=g)  # partial rotary: rotary_dim 8 of head_size 16
    for neox in (True, False):
        with ascend_ops.use_backend("npu"):
            got = ascend_ops.rotary_embedding(pos, q, k, 16, cache, neox)
        r[f"rotary_embedding(neox={neox})"] = (got, reference.rotary_embedding(pos, q, k, 16, cache, neox))

    # separate contiguous K and V caches: the layout the ATB kernel writes through
    buf = torch.zeros(2, 3, 4, 2, 8, dtype=dtype)
    key, val = torch.randn(3, 2, 8, generator=g).to(dtype), torch.randn(3, 2, 8, generator=g).to(dtype)
    slots = torch.tensor([5, -1, 11])
    with ascend_ops.use_backend("npu"):
        ascend_ops.reshape_and_cache(key, val, buf[0], buf[1], slots)
    expect = torch.zeros_like(buf)
    reference.reshape_and_cache(key, val, expect[0], expect[1], slots)
    r["reshape_and_cache"] = (buf, expect)

    p = make_paged_problem([3, 1, 2], [3, 6, 9], 4, 2, 16, 4, dtype, seed=1)
    args = [p[n] for n in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")]
    for causal in (True, False):
        with ascend_ops.use_backend("npu"):
            got = ascend_ops.fused_infer_attention(*args, 0.25, causal)
        want = reference.fused_infer_attention(*args, 0.25, causal)
        r[f"fused_infer_attention(causal={causal})"] = (got, want)
        # graph form: host lengths, workspace, .out overload into caller-owned tensors
        ends, kv = [3, 4, 6], [3, 6, 9]
        out, lse = torch.full_like(p["query"], float("nan")), p["query"].new_empty(1)
        with ascend_ops.use_backend("npu"):
            ws = ascend_ops.fused_infer_attention_workspace(*args[:4], 0.25, causal, ends, kv)
            ascend_ops.fused_infer_attention(*args, 0.25, causal, actual_seq_lengths=ends,
                                             actual_seq_lengths_kv=kv, out=out, softmax_lse=lse,
                                             workspace=ws)
        r[f"fused_infer_attention.out(causal={causal})"] = (out, want)
    return r


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_npu_branch_of_every_op_matches_reference(npu_branch, dtype):
    results = _run_all_ops(dtype)
    # exact in float32; in bf16 the ATB rope needs cos_sin_cache cast to bf16 (one rounding more)
    tol = dict(atol=0, rtol=0) if dtype == torch.float32 else dict(atol=3e-2, rtol=3e-2)
    for name, (got, expect) in results.items():
        torch.testing.assert_close(got, expect, **tol, msg=lambda m, name=name: f"{name}: {m}")
    assert npu_branch.called() == set(KERNELS)
    assert ascend_ops.call_counts(per_backend=True)[("fused_infer_attention", "npu")] >= 2


def test_every_yaml_custom_schema_parses(schemas):
    custom, atb = schemas
    assert len(custom) > 100
    for func in custom.values():
        torch._C.parse_schema(func)
    for name in ("_npu_rotary_embedding", "_npu_reshape_and_cache"):
        assert name in atb, f"{name} prototype not found in AtbOpsInterface.h"
    parsed = torch._C.parse_schema(atb["_npu_reshape_and_cache"])
    assert [a.name for a in parsed.arguments] == ["key", "value", "key_cache", "value_cache", "slot_indices"]
    assert parsed.arguments[2].alias_info.is_write


def test_atb_prototype_conversion():
    line = ("TORCH_NPU_API void _npu_x(const at::Tensor&q, at::Tensor &out, int64_t n, "
            "double s, bool flag, const c10::optional<at::Tensor>&mask);")
    assert atb_prototype_to_schema(line) == (
        "_npu_x(Tensor q, Tensor(a!) out, int n, float s, bool flag, Tensor? mask) -> ()"
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m, x, w: m.npu_rms_norm(x, w, eps=1e-6), "eps"),  # unknown kwarg
        (lambda m, x, w: m.npu_rms_norm(x), "gamma"),  # missing required
        (lambda m, x, w: m.npu_rms_norm(x, w, epsilon="small"), "epsilon"),  # wrong type
        (lambda m, x, w: m.npu_swiglu(x, dim=1.5), "dim"),
    ],
)
def test_fake_rejects_calls_that_break_the_schema(fake_npu, call, match):
    x, w = torch.randn(2, 8), torch.ones(8)
    with pytest.raises((RuntimeError, TypeError), match=match):
        call(fake_npu.module, x, w)


def _source_files():
    roots = [PKG_ROOT / "src"]
    repo = PKG_ROOT.parents[1]
    if (repo / "packages").is_dir() and (repo / "pyproject.toml").is_file():
        roots += [p / "src" for p in (repo / "packages").iterdir() if p.name != PKG_ROOT.name]
        roots.append(repo / "src")
    return [f for root in roots if root.is_dir() for f in root.rglob("*.py")]


# Other op families add (kernels module, dict name, sample module, runner name) here so the
# coverage check below drives their NPU branch too.
EXTRA_CONTRACTS = [("npu_kernels_moe", "MOE_KERNELS", "moe_samples", "run_moe_ops")]


def test_every_torch_npu_operator_call_is_contract_checked(schemas, monkeypatch):
    import importlib

    kernels, runners = dict(KERNELS), [_run_all_ops]
    for kmod, kname, smod, sname in EXTRA_CONTRACTS:
        try:
            kernels.update(getattr(importlib.import_module(kmod), kname))
            runners.append(getattr(importlib.import_module(smod), sname))
        except (ImportError, AttributeError):
            continue
    fake = FakeTorchNpu(*schemas, kernels)
    monkeypatch.setitem(__import__("sys").modules, "torch_npu", fake.module)
    with ascend_ops.use_backend("npu"):
        for run in runners:
            run(torch.float32)
    exercised = fake.called()
    referenced = {}
    for f in _source_files():
        for m in OPERATOR_CALL.finditer(f.read_text(errors="replace")):
            referenced.setdefault(m.group(1) or m.group(2), []).append(str(f))
    assert referenced, "no torch_npu operator call found: the grep is broken"
    missing = {op: files for op, files in referenced.items() if op not in exercised}
    assert not missing, f"torch_npu operator calls not exercised by the contract tests: {missing}"


def test_npu_branch_refuses_strided_cache_halves(npu_branch):
    """The ATB cache write and FIA's paged KV read dense caches: halves of one
    [.., 2*D] buffer would be copied (FIA) or written wrongly (ATB), so the NPU branch refuses."""
    buf = torch.zeros(3, 4, 2, 16)
    key = torch.randn(2, 2, 8)
    with ascend_ops.use_backend("npu"), pytest.raises(ValueError, match="key_cache must be contiguous"):
        ascend_ops.reshape_and_cache(key, key, buf[..., :8], buf[..., 8:], torch.tensor([0, 1]))
    p = make_paged_problem([1], [3], 4, 2, 8, 4, torch.float32, seed=2)
    kc = torch.cat([p["key_cache"], p["value_cache"]], dim=-1)
    with ascend_ops.use_backend("npu"), pytest.raises(ValueError, match="key_cache must be contiguous"):
        ascend_ops.fused_infer_attention(p["query"], kc[..., :8], kc[..., 8:], p["block_table"],
                                         p["query_start_loc"], p["seq_lens"], 0.25)
