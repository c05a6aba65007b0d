# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The "ascend" sleep-mode backend (worker/sleep_mode.py) on both vLLM contracts of
``SleepModeBackend.suspend`` (vllm/device_allocator/sleep_mode_backend.py): vLLM 0.33's
``suspend(level)`` and vLLM 0.34's ``suspend(discardable)``, then the installed vLLM's own
``Worker.sleep`` / ``wake_up`` (vllm/v1/worker/gpu_worker.py) driving ``NPUWorker`` and the backend
over a small model in CPU emulation, with ``--sleep-preserve-parameter-names``."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest
import torch
from ascend_ops.device import tagged_memory
from vllm.device_allocator.sleep_mode_backend import SleepModeBackend
from vllm_ascend_platform.worker.sleep_mode import AscendSleepModeBackend

#: which contract the installed vLLM's workers call
DISCARDABLE_CONTRACT = "discardable" in inspect.signature(SleepModeBackend.suspend).parameters


class _Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.embed = torch.nn.Parameter(torch.randn(64, 16, generator=gen))
        self.norm = torch.nn.Parameter(torch.rand(16, generator=gen) + 0.5)
        self.register_buffer("inv_freq", torch.arange(1, 9, dtype=torch.float32))


@pytest.fixture
def pool():
    pool = tagged_memory.reset_default_pool()
    yield pool
    tagged_memory.reset_default_pool()


def _registered(pool):
    model = _Model()
    kv = torch.ones(4, 32)
    pool.register("weights", [*model.parameters(), *model.buffers()])
    pool.register("kv_cache", [kv])
    ref = {n: t.detach().clone() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    return model, kv, ref


def _addr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def test_discardable_storages_dropped_rest_to_host(pool):
    """vLLM 0.34: the storages in ``discardable`` are freed without a copy (zeros after resume),
    every other weight storage goes to host memory; the KV cache is freed."""
    model, kv, ref = _registered(pool)
    backend = AscendSleepModeBackend()
    backend.suspend({_addr(model.embed)})
    assert backend.state() == "SUSPENDED"
    assert pool.state("weights") == "offloaded" and pool.state("kv_cache") == "discarded"
    kept = model.norm.nbytes + model.inv_freq.nbytes
    assert backend.last_bytes == {"to_host": kept,
                                  "freed": model.embed.nbytes + kept + kv.nbytes}
    assert pool.host_bytes() == kept
    assert kv.untyped_storage().nbytes() == 0 and model.embed.untyped_storage().nbytes() == 0
    backend.resume(["weights"])
    assert backend.state() == "SUSPENDED"  # the KV cache is still off
    assert torch.equal(model.norm, ref["norm"]) and torch.equal(model.inv_freq, ref["inv_freq"])
    assert not model.embed.any()
    backend.resume(["kv_cache"])
    assert backend.state() == "RUNNING" and not kv.any()


def test_nothing_discardable_keeps_every_weight(pool):
    """vLLM 0.34 at level 1 passes an empty collection: all weights come back."""
    model, kv, ref = _registered(pool)
    backend = AscendSleepModeBackend()
    backend.suspend(())
    assert backend.last_bytes["to_host"] == sum(t.nbytes for t in ref.values())
    backend.resume()
    assert backend.state() == "RUNNING"
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        assert torch.equal(t, ref[name]), name


@pytest.mark.parametrize("level", [1, 2])
def test_level_contract(pool, level):
    """vLLM 0.33: ``suspend(level)``; level 1 keeps every weight, level 2 none."""
    model, kv, ref = _registered(pool)
    backend = AscendSleepModeBackend()
    backend.suspend(level)
    assert pool.state("weights") == ("offloaded" if level == 1 else "discarded")
    assert pool.host_bytes() == (sum(t.nbytes for t in ref.values()) if level == 1 else 0)
    backend.resume()
    assert torch.equal(model.norm, ref["norm"]) is (level == 1)
    assert not kv.any()


def test_bad_input_and_double_suspend(pool):
    _registered(pool)
    backend = AscendSleepModeBackend()
    for bad in (0, 3, True):
        with pytest.raises(ValueError, match="sleep level must be 1"):
            backend.suspend(bad)
    assert backend.state() == "RUNNING" and pool.state("weights") == "resident"
    backend.suspend(())
    with pytest.raises(RuntimeError, match="already asleep"):
        backend.suspend(())
    with pytest.raises(ValueError, match="unknown memory tag"):
        backend.resume(["bogus"])
    backend.resume()


def test_discard_tags(pool):
    """``discard(tags)`` frees the named groups without keeping contents, asleep or awake."""
    model, kv, ref = _registered(pool)
    backend = AscendSleepModeBackend()
    backend.discard(("kv_cache",))
    assert pool.state("kv_cache") == "discarded" and pool.state("weights") == "resident"
    assert backend.state() == "SUSPENDED" and backend.last_bytes == {"freed": kv.nbytes}
    backend.resume(["kv_cache"])
    assert backend.state() == "RUNNING"
    backend.suspend(())  # weights offloaded ...
    backend.discard(("weights",))  # ... then their host copies dropped too
    assert pool.state("weights") == "discarded" and pool.host_bytes() == 0
    with pytest.raises(ValueError, match="unknown memory tag"):
        backend.discard(("bogus",))
    backend.resume()
    assert not model.norm.any()


# ---- the installed vLLM's Worker.sleep / wake_up over NPUWorker ------------------------------

def _worker(monkeypatch, pool, preserve: list[str]):
    from ascend_ops import device
    from vllm_ascend_platform.worker.worker import NPUWorker

    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    # vLLM asserts that free device memory did not shrink; emulated free memory is process RSS,
    # which other tests move: a constant keeps this test about the weights
    monkeypatch.setattr(device, "mem_get_info", lambda *a, **k: (1 << 30, 1 << 31))
    model, kv, ref = _registered(pool)
    model_config = SimpleNamespace(sleep_preserve_parameter_names=preserve,
                                   enable_nccl_comm_suspend=False, enable_sleep_mode=True)
    worker = object.__new__(NPUWorker)
    worker.model_config = model_config
    worker.vllm_config = SimpleNamespace(model_config=model_config)
    worker.model_runner = SimpleNamespace(model=model, get_draft_model=lambda: None)
    worker.device = torch.device("cpu")
    worker.get_draft_model = lambda: None
    worker._sleep_mode_backend = AscendSleepModeBackend()
    # vLLM 0.33's Worker.__init__ state for level-2 sleep
    worker._sleep_saved_parameters = {}
    worker._sleep_saved_buffers = {}
    worker._sleep_saved_draft_buffers = {}
    return worker, model, kv, ref


def test_vllm_worker_level_2_keeps_preserved_parameter_and_buffers(monkeypatch, pool):
    """Whichever contract the installed vLLM calls: after level-2 sleep and ``wake_up``, the
    ``--sleep-preserve-parameter-names`` parameter and the buffers are back, the other
    parameters are zeros (until ``reload_weights``), the KV cache is zeros."""
    worker, model, kv, ref = _worker(monkeypatch, pool, ["norm"])
    calls = []
    suspend = AscendSleepModeBackend.suspend

    def spy(self, arg=()):
        calls.append(arg)
        return suspend(self, arg)

    monkeypatch.setattr(AscendSleepModeBackend, "suspend", spy)
    embed = _addr(model.embed)
    worker.sleep(2)
    if DISCARDABLE_CONTRACT:  # vLLM 0.34: the storages to drop, the preserved one left out
        assert calls == [{embed}]
    else:
        assert calls == [2]
    assert worker.sleep_mode_backend.state() == "SUSPENDED"
    worker.wake_up(None)
    assert worker.sleep_mode_backend.state() == "RUNNING"
    assert torch.equal(model.norm, ref["norm"]) and torch.equal(model.inv_freq, ref["inv_freq"])
    assert not model.embed.any() and not kv.any()


def test_vllm_worker_level_1_keeps_every_weight(monkeypatch, pool):
    worker, model, kv, ref = _worker(monkeypatch, pool, [])
    worker.sleep(1)
    worker.wake_up(None)
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        assert torch.equal(t, ref[name]), name


def test_worker_refuses_a_bad_level_before_releasing_anything(monkeypatch, pool):
    """vLLM 0.34's ``Worker.sleep`` runs every level but 2 as level 1; ``NPUWorker.sleep``
    refuses the others first (the error the OpenAI server's ``/sleep?level=3`` answers)."""
    worker, model, kv, ref = _worker(monkeypatch, pool, [])
    with pytest.raises(ValueError, match="sleep level must be 1"):
        worker.sleep(3)
    assert worker.sleep_mode_backend.state() == "RUNNING"
    assert pool.state("weights") == "resident" and pool.state("kv_cache") == "resident"
