# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Worker start method and the bounded wait for worker READY (``vllm_ascend_platform.worker.start``).

The hang being fixed is checked at its root here, independently of vLLM: GNU OpenMP (torch's
intra-op pool on this wheel) leaves a forked child that runs a parallel region waiting for pool
threads that were not copied by ``fork`` once the parent has run one (vLLM's own account:
``set_multiprocessing_worker_envs`` in ``vllm/v1/executor/multiproc_executor.py``); a spawned
child starts a fresh runtime. The bounded wait is checked against vLLM 0.32's contract for
``WorkerProc.wait_for_ready`` (READY message per rank, EOF when a worker dies).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from dataclasses import dataclass

import pytest
from vllm_ascend_platform.patches import registry as patches
from vllm_ascend_platform.worker.start import (
    WorkerStartupTimeout,
    bounded_wait_for_ready,
    choose_worker_start_method,
    ready_timeout_s,
)

# --------------------------------------------------------------------------- start method


def test_unset_start_method_becomes_spawn():
    env: dict[str, str] = {}
    assert choose_worker_start_method(env) == "spawn"
    assert env == {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}


def test_explicit_spawn_is_kept_quietly(caplog):
    env = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    with caplog.at_level(logging.WARNING, logger="vllm.ascend"):
        assert choose_worker_start_method(env) == "spawn"
    assert not caplog.records


def test_explicit_fork_is_kept_with_a_warning(caplog):
    env = {"VLLM_WORKER_MULTIPROC_METHOD": "fork"}
    with caplog.at_level(logging.WARNING, logger="vllm.ascend"):
        assert choose_worker_start_method(env) == "fork"
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "fork"
    assert "docs/worker-start.md" in caplog.text and "spawn" in caplog.text


def test_bad_start_method_names_the_variable():
    with pytest.raises(ValueError, match="VLLM_WORKER_MULTIPROC_METHOD='forkserver'"):
        choose_worker_start_method({"VLLM_WORKER_MULTIPROC_METHOD": "forkserver"})


def test_config_defaults_choose_spawn(monkeypatch):
    """``check_and_update_config``'s worker step sets the variable vLLM's ``get_mp_context`` reads."""
    from vllm.utils.system_utils import get_mp_context
    from vllm_ascend_platform.startup import config_defaults

    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)
    config_defaults._worker_start_method()
    assert os.environ["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert get_mp_context().get_start_method() == "spawn"


# --------------------------------------------------------------------------- timeout value


def test_ready_timeout_defaults_to_vllm(monkeypatch):
    monkeypatch.delenv("VLLM_ENGINE_READY_TIMEOUT_S", raising=False)
    assert ready_timeout_s() == 600.0  # vLLM 0.32's default (vllm/envs.py)
    monkeypatch.setenv("VLLM_ENGINE_READY_TIMEOUT_S", "12")
    assert ready_timeout_s() == 12.0


@pytest.mark.parametrize("raw", ["soon", "0", "-5"])
def test_bad_ready_timeout_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv("VLLM_ENGINE_READY_TIMEOUT_S", raw)
    with pytest.raises(ValueError, match="VLLM_ENGINE_READY_TIMEOUT_S"):
        ready_timeout_s()


# --------------------------------------------------------------------------- bounded wait


@dataclass
class _Handle:  # the fields of vLLM's UnreadyWorkerProcHandle that the wait reads
    proc: multiprocessing.process.BaseProcess
    rank: int
    ready_pipe: object


def _answer(pipe, delay_s: float, status: str | None) -> None:
    time.sleep(delay_s)
    if status is not None:
        pipe.send({"status": status, "rank_marker": True})
    time.sleep(60 if status == "hang" else 0)


def _start(ctx, rank: int, delay_s: float, status: str | None) -> _Handle:
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_answer, args=(writer, delay_s, status), daemon=True)
    proc.start()
    writer.close()
    return _Handle(proc, rank, reader)


@pytest.fixture
def fake_response_handles(monkeypatch):
    """READY responses become ``("ready", rank)`` instead of vLLM's message-queue handles."""
    from vllm.v1.executor.multiproc_executor import WorkerProc

    monkeypatch.setattr(WorkerProc, "wait_for_response_handle_ready",
                        staticmethod(lambda response, handle: ("ready", handle.rank)))


@pytest.fixture
def started():
    procs: list[multiprocessing.process.BaseProcess] = []
    yield procs
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join(5)


def test_all_ready_in_rank_order(fake_response_handles, started):
    ctx = multiprocessing.get_context("fork")
    handles = [_start(ctx, 1, 0.0, "READY"), _start(ctx, 0, 0.3, "READY")]
    started.extend(h.proc for h in handles)
    assert bounded_wait_for_ready(handles, timeout_s=30) == [("ready", 0), ("ready", 1)]


def test_silent_worker_times_out_naming_rank_pid_step_and_checks(fake_response_handles,
                                                                   started):
    ctx = multiprocessing.get_context("fork")
    # rank 1 keeps its pipe open and never answers: a worker stuck in start-up
    silent_reader, silent_writer = ctx.Pipe(duplex=False)
    sleeper = ctx.Process(target=time.sleep, args=(60,), daemon=True)
    sleeper.start()
    handles = [_start(ctx, 0, 0.0, "READY"), _Handle(sleeper, 1, silent_reader)]
    started.extend([handles[0].proc, sleeper])
    t0 = time.monotonic()
    with pytest.raises(WorkerStartupTimeout) as err:
        bounded_wait_for_ready(handles, timeout_s=1.5)
    elapsed = time.monotonic() - t0
    silent_writer.close()
    assert 1.4 < elapsed < 10
    msg = str(err.value)
    assert f"rank 1 (pid {sleeper.pid}, alive) never reported READY" in msg
    assert "ready: rank 0" in msg
    assert "VLLM_ENGINE_READY_TIMEOUT_S" in msg
    assert "init_device" in msg and "rendezvous" in msg and "load_model" in msg  # the step
    assert f"py-spy dump --pid <pid>` for pids {sleeper.pid}" in msg  # what to check
    assert "VLLM_WORKER_MULTIPROC_METHOD" in msg


def test_dead_worker_fails_at_once_as_vllm_does(fake_response_handles, started):
    ctx = multiprocessing.get_context("fork")
    handles = [_start(ctx, 0, 0.0, None)]  # exits without a message: its pipe reaches EOF
    started.extend(h.proc for h in handles)
    t0 = time.monotonic()
    with pytest.raises(Exception, match="WorkerProc initialization failed"):
        bounded_wait_for_ready(handles, timeout_s=60)
    assert time.monotonic() - t0 < 30


def test_failed_status_fails_as_vllm_does(fake_response_handles, started):
    ctx = multiprocessing.get_context("fork")
    handles = [_start(ctx, 0, 0.0, "FAILED")]
    started.extend(h.proc for h in handles)
    with pytest.raises(Exception, match="WorkerProc initialization failed"):
        bounded_wait_for_ready(handles, timeout_s=60)


def _parallel_then_ready(pipe) -> None:
    import torch

    torch.ones(1 << 20).add_(1).sum()  # large enough for an OpenMP parallel region
    pipe.send({"status": "READY"})


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_fork_after_parallel_region_hangs_spawn_does_not(fake_response_handles, started,
                                                        method):
    """The root cause: fork after the parent ran an OpenMP region hangs the child; spawn works.

    A fork-started child that hangs is what the bound exists for: it raises instead of waiting.
    """
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.ones(1 << 20).add_(1).sum()  # the parent runs a parallel region first
        ctx = multiprocessing.get_context(method)
        reader, writer = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_parallel_then_ready, args=(writer,), daemon=True)
        proc.start()
        writer.close()
        started.append(proc)
        handles = [_Handle(proc, 0, reader)]
        if method == "spawn":
            assert bounded_wait_for_ready(handles, timeout_s=120) == [("ready", 0)]
        else:
            with pytest.raises(WorkerStartupTimeout, match=f"rank 0 \\(pid {proc.pid}, alive\\)"):
                bounded_wait_for_ready(handles, timeout_s=10)
    finally:
        torch.set_num_threads(old)


# --------------------------------------------------------------------------- the patch


def test_patch_is_declared_and_applies_to_vllm_034():
    from vllm.v1.executor.multiproc_executor import WorkerProc

    declared = {p.name: p for p in patches.registered_patches()}
    patch = declared["worker-ready-timeout"]
    assert patch.target == "vllm.v1.executor.multiproc_executor:WorkerProc.wait_for_ready"
    status = patches._evaluate(patch, "0.34.0")
    assert status.state == patches.PENDING, status.reason
    assert patches._evaluate(patch, "0.33.0").state == patches.SKIPPED
    assert patches._evaluate(patch, "0.35.0").state == patches.SKIPPED
    patch.apply()
    assert WorkerProc.wait_for_ready is bounded_wait_for_ready


# --------------------------------------------------------------------------- worker-side steps


def test_rendezvous_a_peer_never_joins_names_rank_and_step(tmp_path):
    """A real gloo rendezvous (FileStore, world size 2) that rank 1 never joins: torch's own
    error is a bare 'Wait timeout'; through ``startup_step`` it names the rank, the step and
    what to check, with torch's error chained."""
    import datetime

    import torch.distributed as dist
    from vllm_ascend_platform.worker.start import startup_step

    store = dist.FileStore(str(tmp_path / "rendezvous"), 2)
    t0 = time.monotonic()
    with pytest.raises(WorkerStartupTimeout) as err:
        with startup_step(0, "torch.distributed rendezvous of all ranks"):
            dist.init_process_group("gloo", store=store, rank=0, world_size=2,
                                    timeout=datetime.timedelta(seconds=2))
    assert time.monotonic() - t0 < 30
    msg = str(err.value)
    assert msg.startswith("vllm-ascend: rank 0 timed out in start-up step torch.distributed "
                          "rendezvous of all ranks")
    assert "other ranks' logs" in msg and "--distributed-timeout-seconds" in msg
    assert err.value.__cause__ is not None
    assert not dist.is_initialized()


def test_other_start_up_errors_pass_through_unchanged():
    from vllm_ascend_platform.worker.start import startup_step

    boom = ValueError("bad dtype")
    with pytest.raises(ValueError) as err:
        with startup_step(1, "init_device"):
            raise boom
    assert err.value is boom
