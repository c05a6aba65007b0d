# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""FULL-graph attention parameter update on the simulated NPU (docs/simulated-npu.md).

A dense layer's forward is captured into a simulated ``NPUGraph`` with one step's host lengths;
the next step (one more token per request, written into the cache outside the graph, new query
contents) is replayed. With the update hook (``graph_params.update_graph_params``) the replay
equals the paged-attention reference at the new lengths; without it the replay keeps the
capture-time lengths and differs (negative control). Independent source: the reference kernel
``ascend_ops.reference.fused_infer_attention``, fed the new lengths directly.
"""

from __future__ import annotations

from types import SimpleNamespace

import ascend_ops
import pytest
import torch
from vllm_ascend_attention import graph_params
from vllm_ascend_attention.backends.dense import (
    AscendAttentionImpl,
    AscendAttentionMetadata,
    split_kv_cache,
)
from vllm_ascend_attention.host_lengths import HostLengths

HQ, HK, D, BS, NB = 4, 2, 64, 16, 6
DT = torch.bfloat16




def _step_metadata(block_table, seq_lens):
    n = len(seq_lens)
    return AscendAttentionMetadata(
        num_actual_tokens=n, max_query_len=1,
        query_start_loc=torch.arange(n + 1, dtype=torch.int32),
        seq_lens=torch.tensor(seq_lens, dtype=torch.int32), block_table=block_table,
        slot_mapping=torch.full((n,), -1), lengths=HostLengths(list(range(1, n + 1)), list(seq_lens)))


def _run(sim, update: bool):
    g = torch.Generator().manual_seed(0)
    kv = torch.randn(NB, BS, HK, 2 * D, generator=g).to(DT).permute(0, 2, 1, 3)  # LBNHC view
    block_table = torch.tensor([[3, 1], [0, 5]], dtype=torch.int32)
    impl = AscendAttentionImpl(HQ, D, 0.125, HK, None, None, "auto")
    layer = SimpleNamespace(layer_name="model.layers.0.self_attn.attn")
    # persistent input buffer; the query is a column slice of the fused QKV output, as in vLLM
    q = torch.randn(2, HQ * D + 2 * HK * D, generator=g).to(DT)[:, : HQ * D]
    output = torch.zeros(2, HQ * D, dtype=DT)
    from ascend_ops import device

    graph = device.Graph()
    graph.capture_begin()
    impl.forward(layer, q, None, None, kv, _step_metadata(block_table, [5, 9]), output=output)
    graph.capture_end()
    assert len(graph_params.captured(None)) == 1
    # next step: new query contents in place, one more cached token per request
    q.copy_(torch.randn(2, HQ * D, generator=g).to(DT))
    new_lens = [6, 10]
    md = _step_metadata(block_table, new_lens)
    if update:
        assert graph_params.update_graph_params(
            SimpleNamespace(batch_descriptor=None, attn_metadata={layer.layer_name: md})) == 1
    graph.replay()
    k_cache, v_cache = split_kv_cache(kv, D)
    want = ascend_ops.reference.fused_infer_attention(
        q.view(2, HQ, D), k_cache, v_cache, block_table, md.query_start_loc, md.seq_lens, 0.125, True)
    return output.view(2, HQ, D), want


def test_replay_after_update_uses_the_step_lengths(sim):
    got, want = _run(sim, update=True)
    torch.testing.assert_close(got.float(), want.float(), atol=2e-2, rtol=2e-2)


def test_replay_without_update_hangs_on_the_external_event(sim):
    """Without the update nothing records the layer's ExternalEvent, and the captured wait never
    returns (torch_npu ExternalEvent: a flag that only a record sets)."""
    with pytest.raises(sim.SimulatedNpuError, match="device hang: ExternalEvent"):
        got, want = _run(sim, update=False)
        got.float()


def test_replay_with_the_event_but_no_update_keeps_capture_lengths(sim, monkeypatch):
    """Negative control: the event recorded by hand, the task not updated: the replay runs with
    the capture-time lengths and differs from the reference at the new lengths."""
    real_replay = torch.npu.NPUGraph.replay

    def replay_after_record(self):
        for call in graph_params.captured(None).values():
            call.event.record(torch.npu.current_stream())
        real_replay(self)

    monkeypatch.setattr(torch.npu.NPUGraph, "replay", replay_after_record)
    got, want = _run(sim, update=False)
    assert not torch.allclose(got.float(), want.float(), atol=2e-2, rtol=2e-2)


def _two_steps(sim):
    """Capture at lengths [5, 9], then two FULL steps issued back to back as async scheduling
    does: step A's result is consumed by a device op (queued, not read on the host) before
    step B's inputs, update and replay are issued; the host reads both results only at the end."""
    from ascend_ops import device

    g = torch.Generator().manual_seed(0)
    kv = torch.randn(NB, BS, HK, 2 * D, generator=g).to(DT).permute(0, 2, 1, 3)
    block_table = torch.tensor([[3, 1], [0, 5]], dtype=torch.int32)
    impl = AscendAttentionImpl(HQ, D, 0.125, HK, None, None, "auto")
    layer = SimpleNamespace(layer_name="model.layers.0.self_attn.attn")
    q = torch.randn(2, HQ * D, generator=g).to(DT)
    output = torch.zeros(2, HQ * D, dtype=DT)
    graph = device.Graph()
    graph.capture_begin()
    impl.forward(layer, q, None, None, kv, _step_metadata(block_table, [5, 9]), output=output)
    graph.capture_end()
    k_cache, v_cache = split_kv_cache(kv, D)
    results, wants = [], []
    for lens in ([6, 10], [7, 11]):
        q_step = torch.randn(2, HQ * D, generator=g).to(DT)
        q.copy_(q_step)  # queued behind the previous replay, which reads q
        md = _step_metadata(block_table, lens)
        graph_params.update_graph_params(SimpleNamespace(batch_descriptor=None,
                                                         attn_metadata={layer.layer_name: md}))
        graph.replay()
        results.append(output.clone())  # a device op on the replay's output: queued
        wants.append(ascend_ops.reference.fused_infer_attention(
            q_step.view(2, HQ, D), k_cache, v_cache, block_table, md.query_start_loc, md.seq_lens, 0.125, True))
    return [r.view(2, HQ, D).float() for r in results], wants


@pytest.mark.parametrize("schedule", ["in_order", "adversarial"])
def test_back_to_back_full_steps_each_use_their_own_lengths(sim, monkeypatch, schedule):
    """Async scheduling keeps the host a step ahead of the device. The update for step B must
    not reach the graph before step A's replay ran (vllm-ascend synchronizes the current stream
    before each FULL replay, vllm_ascend/compilation/acl_graph.py): under the adversarial
    schedule, without that synchronisation, step A runs with B's lengths and B's wait hangs."""
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", schedule)
    got, want = _two_steps(sim)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w.float(), atol=2e-2, rtol=2e-2)


def test_adversarial_schedule_exposes_an_update_racing_the_previous_replay(sim, monkeypatch):
    """The simulator itself: with the synchronisation removed, the adversarial schedule runs
    step B's update before step A's replay, and step B's event wait is reported as a hang."""
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "adversarial")
    monkeypatch.setattr(type(torch.npu.current_stream()), "synchronize", lambda self: None)
    with pytest.raises(sim.SimulatedNpuError, match="device hang"):
        got, _ = _two_steps(sim)
        [g.sum() for g in got]


def test_no_capture_no_record_in_emulation():
    """CPU (no simulator): nothing is captured, the hook updates nothing."""
    graph_params.clear()
    assert graph_params.update_graph_params(SimpleNamespace(batch_descriptor=None, attn_metadata={})) == 0


def test_mla_decode_replay_after_update_uses_the_step_lengths(sim):
    """The same for ASCEND_MLA's decode (npu_fused_infer_attention_score with query_rope /
    key_rope), against the MLA reference at the new lengths; without the update it differs."""
    from vllm.v1.attention.backend import AttentionType
    from vllm_ascend_attention.backends.mla import AscendMLAImpl

    n_heads, lat, rope_dim = 4, 512, 64  # FIA's MLA path: 512-wide latent, rope dim 64
    impl = AscendMLAImpl(n_heads, lat + rope_dim, 0.2, 1, None, None, "auto", None,
                         AttentionType.DECODER, None, q_lora_rank=None, kv_lora_rank=lat,
                         qk_nope_head_dim=8, qk_rope_head_dim=rope_dim, qk_head_dim=8 + rope_dim,
                         v_head_dim=8, kv_b_proj=None)
    g = torch.Generator().manual_seed(1)
    cache = torch.randn(NB, 1, BS, lat + rope_dim, generator=g).to(DT)
    table = torch.tensor([[2, 4], [1, 0]], dtype=torch.int32)
    q_nope = torch.randn(2, n_heads, lat, generator=g).to(DT)
    q_pe = torch.randn(2, n_heads, rope_dim, generator=g).to(DT)
    layer = SimpleNamespace(layer_name="model.layers.0.self_attn.attn")

    def meta(kv):
        return SimpleNamespace(decode=SimpleNamespace(block_table=table),
                               ascend_decode=HostLengths([1, 2], kv))

    results = []
    for update in (True, False):
        graph_params.clear()
        from ascend_ops import device

        graph = device.Graph()
        graph.capture_begin()
        out, _ = impl.forward_mqa((q_nope, q_pe), cache, meta([7, 20]), layer)
        graph.capture_end()
        if update:
            graph_params.update_graph_params(
                SimpleNamespace(batch_descriptor=None, attn_metadata={layer.layer_name: meta([8, 21])}))
        else:  # negative control: the event recorded by hand (else the wait hangs), no update
            for call in graph_params.captured(None).values():
                call.event.record(torch.npu.current_stream())
        graph.replay()
        nope, rope = impl._caches(cache)
        want = ascend_ops.reference.mla_decode(q_nope, q_pe, nope, rope, table, [1, 2], [8, 21], 0.2)
        results.append(torch.allclose(out.float(), want.float(), atol=2e-2, rtol=2e-2))
    assert results == [True, False]
