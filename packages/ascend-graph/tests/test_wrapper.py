# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACLGraphWrapper bookkeeping in emulation, against vLLM's own dispatch contract."""

from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import torch
from vllm.config import CUDAGraphMode
from vllm.forward_context import BatchDescriptor, ForwardContext, override_forward_context
from vllm_ascend_graph import params
from vllm_ascend_graph.wrapper import ACLGraphWrapper

CFG = SimpleNamespace(compilation_config=None)


@contextmanager
def step(mode, num_tokens=None, attn_metadata=None, num_reqs=None):
    desc = None if num_tokens is None else BatchDescriptor(num_tokens=num_tokens, num_reqs=num_reqs)
    ctx = ForwardContext(no_compile_layers={}, attn_metadata=attn_metadata or {}, slot_mapping={},
                         cudagraph_runtime_mode=mode, batch_descriptor=desc)
    with override_forward_context(ctx):
        yield


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x * 2 + 1

    some_attribute = "forwarded"


def make(mode=CUDAGraphMode.FULL, **kw):
    runnable = Counting()
    return runnable, ACLGraphWrapper(runnable, CFG, mode, emulate=True, **kw)


def test_no_forward_context_runs_directly():
    runnable, w = make()
    x = torch.arange(4.0)
    assert torch.equal(w(x), x * 2 + 1)
    assert w.entries == {}


@pytest.mark.parametrize("step_mode", [CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE])
def test_mismatched_mode_runs_directly(step_mode):
    runnable, w = make(CUDAGraphMode.FULL)
    with step(step_mode, 4):
        w(torch.ones(4))
    assert w.entries == {} and runnable.calls == 1


def test_one_entry_per_batch_descriptor_capture_then_replay():
    runnable, w = make()
    buf4, buf8 = torch.zeros(4), torch.zeros(8)
    with step(CUDAGraphMode.FULL, 4, num_reqs=4):
        w(buf4)  # capture
    with step(CUDAGraphMode.FULL, 8, num_reqs=8):
        w(buf8)  # capture
    buf4.fill_(3.0)
    with step(CUDAGraphMode.FULL, 4, num_reqs=4):
        out = w(buf4)  # replay on the step's values
    assert torch.equal(out, torch.full((4,), 7.0))
    assert set(w.entries) == {BatchDescriptor(4, 4), BatchDescriptor(8, 8)}
    assert w.entries[BatchDescriptor(4, 4)].num_replays == 1
    assert w.entries[BatchDescriptor(8, 8)].num_replays == 0
    assert w.entries[BatchDescriptor(4, 4)].input_addresses == [buf4.data_ptr()]


def test_replay_with_moved_input_raises_when_checking():
    _, w = make(check_input_addresses=True)
    with step(CUDAGraphMode.FULL, 4):
        w(torch.zeros(4))
    with step(CUDAGraphMode.FULL, 4), pytest.raises(RuntimeError, match="addresses"):
        w(torch.zeros(4))


def test_replay_with_same_buffer_passes_check():
    _, w = make(check_input_addresses=True)
    buf = torch.zeros(4)
    for _ in range(3):
        with step(CUDAGraphMode.FULL, 4):
            w(buf)
    assert w.entries[BatchDescriptor(4)].num_replays == 2


def test_attribute_forwarding_and_unwrap():
    runnable, w = make()
    assert w.some_attribute == "forwarded"
    assert w.unwrap() is runnable
    with pytest.raises(AttributeError):
        w.missing_attribute  # noqa: B018


@pytest.mark.parametrize("bad", [CUDAGraphMode.NONE, CUDAGraphMode.FULL_AND_PIECEWISE])
def test_non_concrete_mode_rejected(bad):
    with pytest.raises(ValueError, match="runtime_mode"):
        ACLGraphWrapper(Counting(), CFG, bad, emulate=True)


def test_missing_batch_descriptor_is_an_error():
    _, w = make()
    with step(CUDAGraphMode.FULL, None), pytest.raises(RuntimeError, match="batch descriptor"):
        w(torch.zeros(4))


def test_clear_all_graphs_recaptures():
    runnable, w = make()
    with step(CUDAGraphMode.FULL, 4):
        w(torch.zeros(4))
    ACLGraphWrapper.clear_all_graphs()
    assert w.entries == {}


def test_param_update_hook_gets_real_seq_lens_before_each_replay():
    """Captured with one step's lengths; each replay must see *its* lengths (padded slots cut)."""
    seen = []
    order = []
    hook = params.register_param_update_hook(lambda p: (seen.append(p), order.append("hook")))

    class Model(Counting):
        def __call__(self, x):
            order.append("run")
            return super().__call__(x)

    def meta(seq_lens, num_reqs):
        # vLLM's FULL-graph padding (GPUModelRunner._prepare_inputs): 4 request slots of
        # which num_reqs are real (decode: one token each); query_start_loc repeats its
        # last value for padded slots, their seq_lens are 0, num_actual_tokens is padded.
        qsl = torch.tensor([min(i, num_reqs) for i in range(5)], dtype=torch.int32)
        return {"layers.0.attn": SimpleNamespace(
            seq_lens=torch.tensor(seq_lens, dtype=torch.int32), query_start_loc=qsl,
            num_actual_tokens=4)}

    w = ACLGraphWrapper(Model(), CFG, CUDAGraphMode.FULL, emulate=True)
    buf = torch.zeros(4)
    try:
        with step(CUDAGraphMode.FULL, 4, meta([5, 9, 2, 7], 4)):
            w(buf)  # capture: no hook
        assert seen == []
        with step(CUDAGraphMode.FULL, 4, meta([6, 10, 3, 0], 3)):
            w(buf)
        with step(CUDAGraphMode.FULL, 4, meta([7, 11, 0, 0], 2)):
            w(buf)
    finally:
        params.unregister_param_update_hook(hook)
    assert [p.seq_lens for p in seen] == [[6, 10, 3], [7, 11]]
    assert [p.num_actual_tokens for p in seen] == [3, 2]
    assert [p.query_start_loc for p in seen] == [[0, 1, 2, 3], [0, 1, 2]]
    assert seen[0].batch_descriptor == BatchDescriptor(4)
    assert order == ["run", "hook", "run", "hook", "run"]


def test_piecewise_replay_runs_no_param_hook():
    seen = []
    hook = params.register_param_update_hook(seen.append)
    try:
        _, w = make(CUDAGraphMode.PIECEWISE)
        buf = torch.zeros(4)
        for _ in range(2):
            with step(CUDAGraphMode.PIECEWISE, 4):
                w(buf)
    finally:
        params.unregister_param_update_hook(hook)
    assert seen == []


def test_register_hook_rejects_non_callable():
    with pytest.raises(TypeError, match="callable"):
        params.register_param_update_hook(42)


def test_replay_params_read_no_lengths_unless_asked():
    """A hook that takes its host lengths from attn_metadata must not cost a device read: the
    length views are snapshots (clones) turned into lists on first access only, and later
    in-place updates of the runner's buffers do not change them."""
    from types import SimpleNamespace
    from unittest import mock

    from vllm_ascend_graph.params import replay_params

    qsl, seq = torch.tensor([0, 1, 2, 2]), torch.tensor([5, 7, 0])
    meta = SimpleNamespace(query_start_loc=qsl, seq_lens=seq, num_actual_tokens=4)
    ctx = SimpleNamespace(batch_descriptor="bd", attn_metadata={"layer": meta})
    with mock.patch.object(torch.Tensor, "tolist", side_effect=AssertionError("read back")):
        params = replay_params(ctx, "FULL")
    assert params.batch_descriptor == "bd" and params.attn_metadata["layer"] is meta
    qsl.fill_(9)
    seq.fill_(9)  # the runner reuses its buffers for the next step
    assert params.query_start_loc == [0, 1, 2] and params.seq_lens == [5, 7]
    assert params.num_actual_tokens == 2
