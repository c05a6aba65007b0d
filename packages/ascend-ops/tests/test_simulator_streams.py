# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The asynchronous simulated device (docs/simulated-npu.md, "Asynchronous device"): queued
replays and task updates, what forces them, host reads, Event / ExternalEvent semantics, hangs,
and the adversarial schedule exposing a missing synchronisation.

Independent oracle for values: plain torch on the same inputs, computed before anything is
queued; for ordering: the documented semantics of CUDA events and torch_npu's ExternalEvent
(a flag: record sets, wait blocks until set and clears, reset clears).
"""

from __future__ import annotations

import pytest
import torch
from ascend_ops import simulator
from ascend_ops.simulator import SimulatedNpuError, streams

pytestmark = pytest.mark.sim_only


def _doubling_graph(x: torch.Tensor, out: torch.Tensor):
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        torch.mul(x, 2, out=out)
    return g


def test_replay_is_queued_until_something_forces_it(simulated_npu):
    x, out = torch.ones(4), torch.zeros(4)
    g = _doubling_graph(x, out)
    out.zero_()
    x.fill_(3.0)
    g.replay()
    assert streams.QUEUE.pending() and not torch.npu.current_stream().query()
    simulator.ledger().reset()
    assert out.tolist() == [6.0] * 4  # a blocking host read runs the replay first
    assert simulator.ledger().host_syncs == 1 and not streams.QUEUE.pending()


def test_host_view_of_queued_memory_is_refused(simulated_npu):
    x, out = torch.ones(4), torch.zeros(4)
    g = _doubling_graph(x, out)
    g.replay()
    producer = r"Tensor.numpy\(\).*NPUGraph.replay.*issued at .*test_simulator_streams"
    with pytest.raises(SimulatedNpuError, match=producer):
        out.numpy()
    torch.npu.current_stream().synchronize()
    simulator.ledger().reset()
    assert out.tolist() == [2.0] * 4 and simulator.ledger().host_syncs == 0  # nothing queued now


def test_ops_on_queued_memory_queue_behind_it_and_ops_elsewhere_run_now(simulated_npu):
    x, out = torch.ones(4), torch.zeros(4)
    g = _doubling_graph(x, out)
    x.fill_(5.0)
    g.replay()
    y = out + 1  # reads the replay's output: queued behind it, result filled later
    x.fill_(7.0)  # the replay reads x: this write waits for it (stream order)
    z = torch.full((2,), 4.0) * 2  # touches nothing queued: runs now
    assert streams.QUEUE.pending()
    assert z.tolist() == [8.0, 8.0]
    assert y.tolist() == [11.0] * 4  # 5 * 2 + 1: the replay saw x before the later fill
    assert x.tolist() == [7.0] * 4


def _cache_write_graph(m):
    """A captured ATB cache write as its own task group (slot 0), and its update to slot 16."""
    key = torch.ones(1, 1, 16, dtype=torch.float16)
    kc, vc = (torch.zeros(2, 16, 1, 16, dtype=torch.float16) for _ in range(2))
    s = torch.npu.current_stream()
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        torch.npu.graph_task_group_begin(s)
        m._npu_reshape_and_cache(key, key, kc, vc, torch.tensor([0], dtype=torch.int32))
        handle = torch.npu.graph_task_group_end(s)
    kc.zero_()
    update_stream = torch.npu.Stream()

    def update_to_slot_16():
        torch.npu.graph_task_update_begin(update_stream, handle)
        m._npu_reshape_and_cache(key, key, kc, vc, torch.tensor([16], dtype=torch.int32))
        torch.npu.graph_task_update_end(update_stream)

    return g, kc, update_to_slot_16


def _written_slots(kc) -> list[int]:
    return [b * 16 + r for b in range(2) for r in range(16) if kc[b, r].abs().sum().item() > 0]


def test_update_reaches_the_graph_when_its_stream_runs_it(simulated_npu, monkeypatch):
    """graph_task_update_end queues the replacement on the update stream: a replay queued
    before it on another stream, with no event between, runs without it under in_order."""
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "in_order")
    g, kc, update = _cache_write_graph(simulated_npu)
    g.replay()  # step A, queued
    update()  # step B's update, issued while step A is queued
    assert _written_slots(kc) == [0]
    g.replay()
    torch.npu.synchronize()
    assert _written_slots(kc) == [0, 16]


def test_adversarial_schedule_runs_the_unordered_update_first(simulated_npu, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "adversarial")
    g, kc, update = _cache_write_graph(simulated_npu)
    g.replay()
    update()
    assert _written_slots(kc) == [16]  # step A ran with step B's update: the race, made visible


def test_an_event_orders_the_update_after_the_replay(simulated_npu, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "adversarial")
    g, kc, update = _cache_write_graph(simulated_npu)
    g.replay()
    torch.npu.current_stream().synchronize()  # what the FULL-graph update path does
    update()
    assert _written_slots(kc) == [0]
    g.replay()
    assert _written_slots(kc) == [0, 16]


def test_host_op_on_another_stream_touching_queued_memory_is_a_race(simulated_npu, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "adversarial")
    x, out = torch.ones(2), torch.zeros(2)
    g = _doubling_graph(x, out)
    g.replay()
    side = torch.npu.Stream()
    with torch.npu.stream(side), pytest.raises(SimulatedNpuError, match="race: .*NPUGraph.replay"):
        out.add_(1)
    side.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(side):
        out.add_(1)  # ordered by the event: queued behind the replay
    assert out.tolist() == [3.0, 3.0]


def test_external_event_is_a_flag_and_an_unsatisfiable_wait_is_a_hang(simulated_npu):
    ev = torch.npu.ExternalEvent()
    s = torch.npu.Stream()
    main = torch.npu.current_stream()
    ev.record(s)
    ev.record(s)  # two records before one wait collapse into one set flag
    ev.wait(main)
    main.synchronize()
    assert ev.flag is False  # the wait cleared it
    ev.wait(main)
    with pytest.raises(SimulatedNpuError, match="device hang: ExternalEvent .* never recorded"):
        main.synchronize()
    streams.QUEUE.clear()


def test_captured_event_wait_needs_a_record_before_each_replay(simulated_npu):
    ev = torch.npu.ExternalEvent()
    x, out = torch.ones(2), torch.zeros(2)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        ev.wait(torch.npu.current_stream())
        torch.mul(x, 3, out=out)
    updater = torch.npu.Stream()
    ev.record(updater)
    g.replay()
    assert out.tolist() == [3.0, 3.0]
    g.replay()  # nothing recorded the event again
    with pytest.raises(SimulatedNpuError, match="device hang"):
        torch.npu.synchronize()
    streams.QUEUE.clear()


def test_queued_work_keeps_the_autograd_mode_it_was_issued_in(simulated_npu):
    with torch.inference_mode():
        x, out = torch.ones(2), torch.zeros(2)
        g = _doubling_graph(x, out)
        g.replay()
        y = out.add_(1)  # an in-place update of an inference tensor, queued
    torch.npu.synchronize()  # runs outside inference mode
    assert y.tolist() == [3.0, 3.0]


def test_eager_schedule_runs_work_at_issue(simulated_npu, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "eager")
    x, out = torch.ones(2), torch.zeros(2)
    g = _doubling_graph(x, out)
    out.zero_()
    g.replay()
    simulator.ledger().reset()
    assert not streams.QUEUE.pending() and out.tolist() == [2.0, 2.0]
    assert simulator.ledger().host_syncs == 0  # the read found nothing queued to wait for


def test_unknown_schedule_is_refused_by_name(simulated_npu, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_SIM_SCHEDULE", "random")
    with pytest.raises(SimulatedNpuError, match="in_order, adversarial, eager"):
        streams.schedule()


def test_event_synchronize_forces_only_up_to_its_record(simulated_npu):
    x, out = torch.ones(2), torch.zeros(2)
    g = _doubling_graph(x, out)
    g.replay()
    e = torch.npu.Event()
    e.record()
    assert not e.query()
    g.replay()
    e.synchronize()
    assert e.query() and streams.QUEUE.pending()  # the second replay is still queued
    torch.npu.synchronize()
    assert not streams.QUEUE.pending()


def test_run_kernel_is_one_op_after_the_work_it_depends_on(simulated_npu):
    """``streams.run_kernel`` (a host stand-in for one kernel launch): the queued work that
    writes what it reads runs first, without a host sync; the ledger counts one launch; the
    stand-in's own aten ops do not go through the device mode; under a capture it is op by op."""
    x, out = torch.ones(4), torch.zeros(4)
    g = _doubling_graph(x, out)
    x.fill_(4.0)
    g.replay()
    assert streams.QUEUE.pending()
    simulator.ledger().reset()
    stack = []

    def kernel(src, dst):
        stack.append(torch._C._len_torch_dispatch_stack())
        dst.copy_(src + 1)
        return dst.sum()

    res = torch.zeros(4)
    total = streams.run_kernel("triton:add_one", [out], [res], kernel, out, res)
    assert res.tolist() == [9.0] * 4 and float(total) == 36.0  # 4 * 2 + 1: after the replay
    assert stack == [0]  # its ops ran without the device mode
    led = simulator.ledger()
    assert led.launches.get("triton:add_one") == 1 and led.host_syncs == 0
    assert not streams.QUEUE.pending()
    # under a graph capture the kernel's ops are captured one by one (the capture mode sees them)
    g2 = torch.npu.NPUGraph()
    with torch.npu.graph(g2):
        streams.run_kernel("triton:add_one", [x], [res], kernel, x, res)
    assert stack[-1] >= 2
