# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``NPUWorker.sleep`` when vLLM's check after the backend suspended fails
(``Worker.sleep`` in vllm/v1/worker/gpu_worker.py asserts that free device memory did not
shrink): at level 1 the weights come back from their host copies before the error is raised,
so the engine, which still counts itself awake, keeps serving; at level 2 they stay asleep."""

from __future__ import annotations

import pytest
from vllm.v1.worker.gpu_worker import Worker
from vllm_ascend_platform.worker.sleep_mode import AscendSleepModeBackend
from vllm_ascend_platform.worker.worker import NPUWorker


class _Backend(AscendSleepModeBackend):
    def suspend(self, level: int = 1) -> None:
        self._state = "SUSPENDED"

    def resume(self, tags=None) -> None:
        self._state = "RUNNING"


def _worker(monkeypatch, fail: bool):
    def vllm_sleep(self, level=1):
        self.sleep_mode_backend.suspend(level)
        if fail:
            raise AssertionError("Memory usage increased after sleeping.")

    monkeypatch.setattr(Worker, "sleep", vllm_sleep)
    woken = []
    monkeypatch.setattr(NPUWorker, "wake_up", lambda self, tags=None: (
        woken.append(tags), self.sleep_mode_backend.resume(tags)))
    worker = object.__new__(NPUWorker)
    worker._sleep_mode_backend = _Backend()
    return worker, woken


def test_failed_level_1_sleep_wakes_up_and_raises(monkeypatch):
    worker, woken = _worker(monkeypatch, fail=True)
    with pytest.raises(AssertionError, match="Memory usage increased"):
        worker.sleep(1)
    assert woken == [None]
    assert worker.sleep_mode_backend.state() == "RUNNING"


def test_failed_level_2_sleep_stays_asleep(monkeypatch):
    worker, woken = _worker(monkeypatch, fail=True)
    with pytest.raises(AssertionError):
        worker.sleep(2)
    assert woken == []
    assert worker.sleep_mode_backend.state() == "SUSPENDED"


def test_successful_sleep_is_left_asleep(monkeypatch):
    worker, woken = _worker(monkeypatch, fail=False)
    worker.sleep(1)
    assert woken == []
    assert worker.sleep_mode_backend.state() == "SUSPENDED"


class _Manager:
    """MRv2's graph manager surface ``wake_up`` uses (``CudaGraphManager.release_graphs``)."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def release_graphs(self) -> None:
        self.calls.append("release_graphs")


@pytest.mark.parametrize("mrv2", [True, False])
def test_wake_up_after_dropped_graphs_releases_the_manager_then_captures(monkeypatch, mrv2):
    """A moved restore dropped the captured graphs: ``wake_up`` empties the MRv2 graph
    manager's table (else it would dispatch to the dropped graphs) before capturing again;
    the V1 runner, which has no manager, only captures again."""
    calls: list[str] = []
    monkeypatch.setattr(Worker, "wake_up", lambda self, tags=None: (
        calls.append("vllm_wake_up"), self.sleep_mode_backend.resume(tags)))
    monkeypatch.setattr(NPUWorker, "compile_or_warm_up_model",
                        lambda self: calls.append("capture"))
    worker = object.__new__(NPUWorker)
    backend = _Backend()
    backend.graphs_dropped = True
    worker._sleep_mode_backend = backend
    runner = type("Runner", (), {})()
    if mrv2:
        runner.cudagraph_manager = _Manager(calls)
    worker.model_runner = runner
    worker.wake_up(None)
    expected = ["vllm_wake_up", "release_graphs", "capture"] if mrv2 else ["vllm_wake_up",
                                                                          "capture"]
    assert calls == expected
    assert backend.graphs_dropped is False
    calls.clear()
    worker.wake_up(None)  # nothing dropped this time: no release, no capture
    assert calls == ["vllm_wake_up"]
