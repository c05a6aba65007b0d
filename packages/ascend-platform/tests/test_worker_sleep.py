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
