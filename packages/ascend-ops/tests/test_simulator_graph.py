# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Simulated NPU graphs: capture records device ops, replay re-runs them on the captured tensors'
current contents with host arguments frozen, task-group updates replace ops, host syncs inside a
capture raise (docs/simulated-npu.md)."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import reference, simulator
from ascend_ops.simulator import SimulatedNpuError
from conftest import make_paged_problem


def _capture(fn):
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = fn()
    return g, out


@pytest.mark.sim_only
def test_replay_reads_current_contents_through_ascend_ops(simulated_npu):
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    res = torch.randn(4, 32, dtype=torch.bfloat16)
    w = torch.rand(32, dtype=torch.bfloat16)
    g, (y, s) = _capture(lambda: ascend_ops.add_rms_norm(x * 2, res, w, 1e-6))
    # the ascend:: op was descended into: its torch_npu operator is what got recorded
    assert g.recorded_ops() == ["aten::mul", "npu_add_rms_norm"]
    x.copy_(torch.randn(4, 32))
    res.copy_(torch.randn(4, 32))
    simulator.ledger().reset()
    g.replay()
    ey, es = reference.add_rms_norm(x * 2, res, w, 1e-6)
    torch.testing.assert_close((y, s), (ey, es), atol=2e-2, rtol=2e-2)
    led = simulator.ledger()
    assert (led.replays, led.replayed_ops) == (1, 2)
    assert led.launches["npu_add_rms_norm"] == 1 and led.launches["aten::mul"] == 1


def test_in_place_and_view_ops_replay_onto_the_same_storage(simulated_npu):
    buf = torch.zeros(2, 8)
    src = torch.randn(2, 4)
    g, _ = _capture(lambda: buf[:, :4].add_(src))  # a view, then an in-place add into it
    assert g.recorded_ops() == ["aten::add_"]
    g.replay()
    torch.testing.assert_close(buf[:, :4], 2 * src)
    assert torch.count_nonzero(buf[:, 4:]) == 0


def test_custom_op_of_another_namespace_is_descended_into(simulated_npu):
    """Like torch.ops.vllm.unified_attention_with_output: its CPU kernel runs under the capture
    and the ops inside are recorded (checked on this torch version)."""
    lib = torch.library.Library("simgraphtest", "FRAGMENT")
    lib.define("twice_plus(Tensor x, Tensor(a!) out) -> ()")

    def twice_plus(x, out):
        out.copy_(x * 2 + 1)

    lib.impl("twice_plus", twice_plus, "CPU")
    x, out = torch.randn(3), torch.empty(3)
    g, _ = _capture(lambda: torch.ops.simgraphtest.twice_plus(x, out))
    assert g.recorded_ops() == ["aten::mul", "aten::add", "aten::copy_"]
    x.copy_(torch.arange(3.0))
    g.replay()
    torch.testing.assert_close(out, torch.tensor([1.0, 3.0, 5.0]))


def _fia_setup():
    p = make_paged_problem([1, 1], [20, 33], 4, 2, 16, 16, torch.bfloat16, seed=5, extra_blocks=2)
    nb, bs = p["key_cache"].shape[:2]
    kc, vc = p["key_cache"].reshape(nb, bs, -1), p["value_cache"].reshape(nb, bs, -1)
    kw = dict(actual_seq_lengths=[1, 2], block_table=p["block_table"], block_size=bs, num_heads=4,
              num_key_value_heads=2, scale=0.25, input_layout="TND")
    return p, kc, vc, kw


def _expected(p, kv_lens):
    qsl = torch.tensor([0, 1, 2])
    return reference.fused_infer_attention(p["query"], p["key_cache"], p["value_cache"], p["block_table"],
                                           qsl, torch.tensor(kv_lens), 0.25, False)


def test_host_list_is_frozen_until_a_task_group_update(simulated_npu):
    m = simulated_npu
    p, kc, vc, kw = _fia_setup()
    kv = [20, 33]
    out, lse = torch.empty_like(p["query"]), torch.empty(1)
    stream = torch.npu.current_stream()
    ws = m._npu_fused_infer_attention_score_get_max_workspace(p["query"], kc, vc, actual_seq_lengths_kv=kv, **kw)

    def body():
        torch.npu.graph_task_group_begin(stream)
        m.npu_fused_infer_attention_score.out(p["query"], kc, vc, actual_seq_lengths_kv=kv, workspace=ws,
                                              out=[out, lse], **kw)
        return torch.npu.graph_task_group_end(stream)

    g, handle = _capture(body)
    torch.testing.assert_close(out, _expected(p, [20, 33]), atol=3e-2, rtol=3e-2)
    kv[0], kv[1] = 5, 7  # the caller reuses its list: the capture must not see it
    out.zero_()
    g.replay()
    torch.testing.assert_close(out, _expected(p, [20, 33]), atol=3e-2, rtol=3e-2)

    out.zero_()
    torch.npu.graph_task_update_begin(stream, handle)
    m.npu_fused_infer_attention_score.out(p["query"], kc, vc, actual_seq_lengths_kv=[5, 7], workspace=ws,
                                          out=[out, lse], **kw)
    torch.npu.graph_task_update_end(stream)
    assert torch.count_nonzero(out) == 0, "the update call must be recorded, not executed"
    for _ in range(2):  # the replacement persists
        out.zero_()
        g.replay()
        torch.testing.assert_close(out, _expected(p, [5, 7]), atol=3e-2, rtol=3e-2)


@pytest.mark.sim_only
def test_task_group_update_must_write_the_captured_outputs(simulated_npu):
    m = simulated_npu
    p, kc, vc, kw = _fia_setup()
    out, lse = torch.empty_like(p["query"]), torch.empty(1)
    s = torch.npu.current_stream()
    ws = m._npu_fused_infer_attention_score_get_max_workspace(p["query"], kc, vc, actual_seq_lengths_kv=[20, 33], **kw)

    def body():
        torch.npu.graph_task_group_begin(s)
        m.npu_fused_infer_attention_score.out(p["query"], kc, vc, actual_seq_lengths_kv=[20, 33], out=[out, lse],
                                              workspace=ws, **kw)
        return torch.npu.graph_task_group_end(s)

    g, handle = _capture(body)
    torch.npu.graph_task_update_begin(s, handle)
    with pytest.raises(SimulatedNpuError, match="not an out= overload"):
        m.npu_fused_infer_attention_score(p["query"], kc, vc, actual_seq_lengths_kv=[5, 7], **kw)
    m.npu_fused_infer_attention_score.out(p["query"], kc, vc, actual_seq_lengths_kv=[5, 7],
                                          out=[torch.empty_like(out), lse], workspace=ws, **kw)
    with pytest.raises(SimulatedNpuError, match="a graph task update is open"):
        g.replay()
    with pytest.raises(SimulatedNpuError, match="did not write at capture"):
        torch.npu.graph_task_update_end(s)
    with pytest.raises(SimulatedNpuError, match="no update open"):
        torch.npu.graph_task_update_end(s)
    with pytest.raises(SimulatedNpuError, match="only valid inside an NPU graph capture"):
        torch.npu.graph_task_group_begin(s)
    g.reset()
    with pytest.raises(SimulatedNpuError, match="stale handle"):
        torch.npu.graph_task_update_begin(s, handle)


SYNCS = [
    ("item", lambda t: t.sum().item(), "item"),
    ("bool", lambda t: bool(t[0] > 0), "bool"),
    ("tolist", lambda t: t.tolist(), r"Tensor.tolist\(\)"),
    ("cpu", lambda t: t.cpu(), r"Tensor.cpu\(\)"),
    ("numpy", lambda t: t.numpy(), r"Tensor.numpy\(\)"),
    ("to_cpu", lambda t: t.to("cpu"), r"Tensor.to\('cpu'\)"),
    ("to_device_cpu", lambda t: t.to(device=torch.device("cpu"), dtype=torch.float64), r"Tensor.to\('cpu'\)"),
    ("synchronize", lambda t: torch.npu.synchronize(), r"torch.npu.synchronize\(\)"),
    ("nonzero", lambda t: t.nonzero(), "nonzero"),
    ("mask", lambda t: t[t > 0], "boolean-mask indexing"),
    ("masked_select", lambda t: t.masked_select(t > 0), "masked_select"),
    ("unique", lambda t: t.unique(), "unique"),
    ("repeat_interleave", lambda t: t.repeat_interleave(torch.tensor([1, 2, 1])), "repeat_interleave"),
]


@pytest.mark.sim_only
@pytest.mark.parametrize("name, fn, match", SYNCS, ids=[s[0] for s in SYNCS])
def test_host_sync_inside_capture_raises(simulated_npu, name, fn, match):
    t = torch.tensor([1.0, -2.0, 3.0])
    g = torch.npu.NPUGraph()
    with pytest.raises(SimulatedNpuError, match=f"host sync inside NPU graph capture: .*{match}.*test_simulator_graph"):
        with torch.npu.graph(g):
            fn(t)
    assert not torch.npu.is_current_stream_capturing()
    assert t.tolist() == [1.0, -2.0, 3.0]  # methods restored after the capture


def test_shape_static_ops_are_fine_inside_capture(simulated_npu):
    t = torch.tensor([1.0, -2.0, 3.0])
    g, out = _capture(lambda: t.repeat_interleave(torch.tensor([1, 2, 1]), output_size=4))
    t.copy_(torch.tensor([4.0, 5.0, 6.0]))
    g.replay()
    assert out.tolist() == [4.0, 5.0, 5.0, 6.0]


@pytest.mark.sim_only
def test_syncs_outside_capture_are_counted(simulated_npu):
    torch.npu.synchronize()
    torch.npu.current_stream().synchronize()
    with simulator.tracking():
        t = torch.ones(4)
        t.sum().item()
        t.clone()
    led = simulator.ledger()
    assert led.host_syncs == 3
    assert {what for what, _, _ in led.host_sync_sites} == {
        "torch.npu.synchronize()", "Stream.synchronize()", "Tensor.item()/bool()/int()/float()"}
    assert led.d2d_bytes == 16 and led.launches["aten::clone"] == 1


@pytest.mark.sim_only
def test_one_capture_at_a_time_and_no_replay_inside(simulated_npu):
    g1, g2 = torch.npu.NPUGraph(), torch.npu.NPUGraph()
    with torch.npu.graph(g1):
        assert torch.npu.is_current_stream_capturing()
        with pytest.raises(SimulatedNpuError, match="already underway"):
            g2.capture_begin()
        with pytest.raises(SimulatedNpuError, match="cannot replay"):
            g2.replay()
    g1.reset()
    assert g1.recorded_ops() == []


def test_public_attention_out_path_captured_and_updated(simulated_npu):
    """ascend_ops.fused_infer_attention(out=...) with host lengths, captured as a task group and
    re-issued with new lengths (the path vllm-ascend's FIA graph update takes)."""
    p = make_paged_problem([1, 1], [20, 33], 4, 2, 16, 16, torch.bfloat16, seed=6, extra_blocks=2)
    args = [p[n] for n in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")]
    ws = ascend_ops.fused_infer_attention_workspace(*args[:4], 0.25, True, [1, 2], [20, 33])
    out, lse = torch.empty_like(p["query"]), torch.empty(1, dtype=torch.bfloat16)
    s = torch.npu.current_stream()

    def call(kv):
        ascend_ops.fused_infer_attention(*args, 0.25, True, actual_seq_lengths=[1, 2], actual_seq_lengths_kv=kv,
                                         out=out, softmax_lse=lse, workspace=ws)

    def body():
        torch.npu.graph_task_group_begin(s)
        call([20, 33])
        return torch.npu.graph_task_group_end(s)

    g, handle = _capture(body)
    assert "npu_fused_infer_attention_score" in g.recorded_ops()

    def expect(kv):
        return reference.fused_infer_attention(*args[:5], torch.tensor(kv), 0.25, True)

    torch.testing.assert_close(out, expect([20, 33]), atol=3e-2, rtol=3e-2)
    torch.npu.graph_task_update_begin(s, handle)
    call([9, 17])
    torch.npu.graph_task_update_end(s)
    out.zero_()
    g.replay()
    torch.testing.assert_close(out, expect([9, 17]), atol=3e-2, rtol=3e-2)


def test_higher_order_ops_are_descended_into(simulated_npu):
    """auto_functionalized (what functionalized compiled graphs call mutating custom ops with)
    runs its composite rule under the capture, so the ops inside are recorded and replayed."""
    from torch._higher_order_ops.auto_functionalize import auto_functionalized

    lib = torch.library.Library("simhoptest", "FRAGMENT")
    lib.define("add_into(Tensor x, Tensor(a!) acc) -> ()")
    def add_into(x, acc):
        acc.add_(x)

    lib.impl("add_into", add_into, "CPU")
    x, acc = torch.ones(3), torch.zeros(3)
    g, (_, new_acc) = _capture(lambda: auto_functionalized(torch.ops.simhoptest.add_into.default, x=x, acc=acc))
    assert "aten::add_" in g.recorded_ops()
    x.fill_(5.0)
    g.replay()
    assert new_acc.tolist() == [5.0, 5.0, 5.0] and acc.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.sim_only
def test_collectives_are_recorded_and_reissued_on_replay(simulated_npu, tmp_path):
    """c10d collectives (gloo here, one rank) are device ops of the graph: replay re-issues them
    and waits for them, as every rank replaying its graph does."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        t = torch.ones(4)
        g, out = _capture(lambda: (dist.all_reduce(t), t * 3)[1])
        assert g.recorded_ops() == ["c10d::allreduce_", "aten::mul"]
        t.fill_(2.0)
        g.replay()
        assert out.tolist() == [6.0] * 4
        assert simulator.ledger().launches["c10d::allreduce_"] == 2
    finally:
        dist.destroy_process_group()


def test_in_place_atb_op_can_be_a_task_group(simulated_npu):
    """A task group of an ATB in-place op (returns nothing) updated with new slots."""
    m = simulated_npu
    key = torch.randn(2, 2, 16, dtype=torch.float16)
    kc, vc = torch.zeros(2, 16, 2, 16, dtype=torch.float16), torch.zeros(2, 16, 2, 16, dtype=torch.float16)
    s = torch.npu.current_stream()

    def body():
        torch.npu.graph_task_group_begin(s)
        m._npu_reshape_and_cache(key, key, kc, vc, torch.tensor([0, 1], dtype=torch.int32))
        return torch.npu.graph_task_group_end(s)

    g, handle = _capture(body)
    torch.npu.graph_task_update_begin(s, handle)
    assert m._npu_reshape_and_cache(key, key, kc, vc, torch.tensor([16, 17], dtype=torch.int32)) is None
    torch.npu.graph_task_update_end(s)
    kc.zero_()
    g.replay()
    assert torch.equal(kc[1, :2], key) and torch.count_nonzero(kc[0]) == 0


@pytest.mark.sim_only
def test_decode_loop_replays_cache_writes_and_updated_lengths(simulated_npu):
    """A vLLM-like decode step captured once: KV write through persistent slot/input buffers,
    FIA as an updatable task group; five replays with new inputs and host lengths each match
    the reference computed eagerly on the same cache."""
    h, hk, d, bs, b = 4, 2, 16, 16, 2
    dt = torch.bfloat16
    kc, vc = torch.zeros(6, bs, hk, d, dtype=dt), torch.zeros(6, bs, hk, d, dtype=dt)
    table = torch.tensor([[0, 1, 2], [3, 4, 5]], dtype=torch.int32)
    q, k, v = torch.zeros(b, h, d, dtype=dt), torch.zeros(b, hk, d, dtype=dt), torch.zeros(b, hk, d, dtype=dt)
    slots, seq = torch.zeros(b, dtype=torch.int64), torch.zeros(b, dtype=torch.int32)
    qsl = torch.tensor([0, 1, 2], dtype=torch.int32)
    out, lse = torch.empty(b, h, d, dtype=dt), torch.empty(1, dtype=dt)
    s = torch.npu.current_stream()
    gen = torch.Generator().manual_seed(7)

    def fill(lens):
        for t in (q, k, v):
            t.copy_(torch.randn(t.shape, generator=gen))
        slots.copy_(torch.tensor([int(table[i, (n - 1) // bs]) * bs + (n - 1) % bs for i, n in enumerate(lens)]))
        seq.copy_(torch.tensor(lens))

    ws = ascend_ops.fused_infer_attention_workspace(q, kc, vc, table, 0.25, True, [1, 2], [5, 9])

    def attend(lens):
        ascend_ops.fused_infer_attention(q, kc, vc, table, qsl, seq, 0.25, True, actual_seq_lengths=[1, 2],
                                         actual_seq_lengths_kv=lens, out=out, softmax_lse=lse, workspace=ws)

    lens = [5, 9]
    fill(lens)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        ascend_ops.reshape_and_cache(k, v, kc, vc, slots)
        torch.npu.graph_task_group_begin(s)
        attend(lens)
        handle = torch.npu.graph_task_group_end(s)
    for _ in range(5):
        lens = [lens[0] + 1, lens[1] + 1]
        fill(lens)
        torch.npu.graph_task_update_begin(s, handle)
        attend(lens)
        torch.npu.graph_task_update_end(s)
        g.replay()
        assert torch.equal(kc.view(-1, hk, d)[slots], k)  # this step's K landed in the cache
        expect = reference.fused_infer_attention(q, kc, vc, table, qsl, torch.tensor(lens), 0.25, True)
        torch.testing.assert_close(out, expect, atol=2e-2, rtol=2e-2)
    assert simulator.ledger().replays == 5


def test_dtype_conversion_inside_capture_is_replayed(simulated_npu):
    """``t.to(dtype)`` returns ``Tensor(a)`` by schema but a fresh tensor when the dtype changes:
    it must be refreshed on replay (a stale int32 copy of the slots wrote the old cache rows)."""
    src = torch.tensor([1, 2, 3])
    g, (converted, same) = _capture(lambda: (src.to(torch.int32) * 1, src.to(torch.int64)))
    src.copy_(torch.tensor([7, 8, 9]))
    g.replay()
    assert converted.tolist() == [7, 8, 9] and same is src
