# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""FIA rules of the simulated torch_npu that come from op-plugin's sources (cited in
ascend_ops/simulator/constraints/core.py and library.py): the MLA path's head count / widths, the
``.out`` overload's ``out=[attention_out, softmax_lse]`` spelling, and the workspace a call
captured in a graph task group (or re-issued in a task update) must be given."""

from __future__ import annotations

import pytest
import torch
from ascend_ops.simulator import SimulatedNpuError

DT = torch.bfloat16


def _mla_call(heads=16, lat=512, rope=64, nkv=1, **change):
    """Arguments of an MLA decode FIA call (TND, paged latent cache as key and value)."""
    g = torch.Generator().manual_seed(0)
    nb, bs = 4, 16
    q = torch.randn(2, heads, lat, generator=g).to(DT)
    kv = torch.randn(nb, bs, nkv * lat, generator=g).to(DT)
    kw = dict(query_rope=torch.randn(2, heads, rope, generator=g).to(DT),
              key_rope=torch.randn(nb, bs, nkv * rope, generator=g).to(DT),
              actual_seq_lengths=[1, 2], actual_seq_lengths_kv=[5, 20],
              block_table=torch.tensor([[0, 1], [2, 3]], dtype=torch.int32), block_size=bs,
              num_heads=heads, num_key_value_heads=nkv, scale=0.05, input_layout="TND")
    kw.update(change)
    return (q, kv, kv), kw


MLA_CASES = [
    ("12 heads", dict(heads=12), "num_heads must be a power of two in \\[1, 128\\], got 12"),
    ("6 heads", dict(heads=6), "got 6"),
    ("256 heads", dict(heads=256), "got 256"),
    ("latent 256", dict(lat=256), "query head dim must be 512 or 128, got 256"),
    ("rope 32", dict(rope=32), "query_rope/key_rope head dim must be 64"),
    ("two kv heads", dict(heads=32, nkv=2), "num_key_value_heads must be 1"),
    ("softmax lse", dict(softmax_lse_flag=True), "does not support softmax_lse_flag=True"),
]


@pytest.mark.parametrize("case, change, match", MLA_CASES, ids=[c[0] for c in MLA_CASES])
def test_mla_rules(simulated_npu, case, change, match):
    args, kw = _mla_call(**change)
    with pytest.raises(SimulatedNpuError, match=f"npu_fused_infer_attention_score: MLA.*{match}"):
        simulated_npu.npu_fused_infer_attention_score(*args, **kw)
    # the workspace query takes the same arguments and refuses them alike
    with pytest.raises(SimulatedNpuError, match=f"_npu_fused_infer_attention_score_get_max_workspace: .*{match}"):
        simulated_npu._npu_fused_infer_attention_score_get_max_workspace(*args, **kw)


@pytest.mark.parametrize("heads", [1, 8, 16, 128])
def test_mla_power_of_two_heads_run(simulated_npu, heads):
    args, kw = _mla_call(heads=heads)
    out, _ = simulated_npu.npu_fused_infer_attention_score(*args, **kw)
    assert out.shape == (2, heads, 512)


def test_out_overload_takes_the_outputs_as_one_list(simulated_npu):
    """torch_npu registers the two outputs as ``Tensor[] out``: ``out=[attention_out,
    softmax_lse]`` works, the yaml names are unknown keywords, a wrong count is refused."""
    m = simulated_npu
    args, kw = _mla_call()
    want, _ = m.npu_fused_infer_attention_score(*args, **kw)
    out, lse = torch.empty_like(want), torch.empty(1, dtype=DT)
    assert m.npu_fused_infer_attention_score.out(*args, **kw, out=[out, lse])[0] is out
    torch.testing.assert_close(out, want)
    with pytest.raises(TypeError, match=r"unexpected keyword.*'attention_out'.*pass out="):
        m.npu_fused_infer_attention_score.out(*args, **kw, attention_out=out, softmax_lse=lse)
    with pytest.raises(TypeError, match="out= needs 2 tensors"):
        m.npu_fused_infer_attention_score.out(*args, **kw, out=[out])


def _capture(body):
    g = torch.npu.NPUGraph()
    g.capture_begin()
    try:
        result = body()
    finally:
        g.capture_end()
    return g, result


def test_task_group_fia_needs_a_workspace(simulated_npu):
    """A captured task-group FIA without workspace (or the functional overload) is refused; with
    the get-max-workspace tensor it captures, and its update must pass the workspace too."""
    m = simulated_npu
    args, kw = _mla_call()
    out, lse = torch.empty(2, 16, 512, dtype=DT), torch.empty(1, dtype=DT)
    ws = m._npu_fused_infer_attention_score_get_max_workspace(*args, **kw)
    s = torch.npu.current_stream()

    def group(call):
        def body():
            torch.npu.graph_task_group_begin(s)
            try:
                call()
            finally:
                torch.npu.graph_task_group_end(s)
        return body

    with pytest.raises(SimulatedNpuError, match="needs workspace="):
        _capture(group(lambda: m.npu_fused_infer_attention_score.out(*args, **kw, out=[out, lse])))
    with pytest.raises(SimulatedNpuError, match="needs workspace="):
        _capture(group(lambda: m.npu_fused_infer_attention_score(*args, **kw)))
    # outside a task group (an op captured but never updated) the rule does not apply
    _capture(lambda: m.npu_fused_infer_attention_score.out(*args, **kw, out=[out, lse]))

    def body():
        torch.npu.graph_task_group_begin(s)
        m.npu_fused_infer_attention_score.out(*args, **kw, workspace=ws, out=[out, lse])
        return torch.npu.graph_task_group_end(s)

    g, handle = _capture(body)
    step = {**kw, "actual_seq_lengths_kv": [6, 21]}
    torch.npu.graph_task_update_begin(s, handle)
    try:
        with pytest.raises(SimulatedNpuError, match="needs workspace="):
            m.npu_fused_infer_attention_score.out(*args, **step, out=[out, lse])
        m.npu_fused_infer_attention_score.out(*args, **step, workspace=ws, out=[out, lse])
    finally:
        torch.npu.graph_task_update_end(s)
    g.replay()
    want, _ = m.npu_fused_infer_attention_score(*args, **step)
    torch.testing.assert_close(out, want)
