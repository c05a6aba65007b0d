# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""How vLLM starts engine-core and worker processes on Ascend, and how long start-up may wait.

Two jobs (docs/worker-start.md explains both with the vLLM sources they follow):

- :func:`choose_worker_start_method` makes vLLM's ``get_mp_context()``
  (``vllm/utils/system_utils.py``) start processes with ``spawn``. vLLM forks by default and only
  switches to ``spawn`` when CUDA/XPU is initialised (``_maybe_force_spawn``); its CPU platform
  always spawns and its XPU platform spawns unless the user chose
  (``check_and_update_config`` in ``vllm/platforms/cpu.py`` / ``xpu.py``). Neither runtime our
  workers use survives a fork: torch_npu/ACL does not, and in CPU emulation GNU OpenMP (libgomp,
  torch's intra-op pool) deadlocks in the child's first parallel region once the parent has run
  one (vLLM says so in ``set_multiprocessing_worker_envs``,
  ``vllm/v1/executor/multiproc_executor.py``).
- the ``worker-ready-timeout`` patch bounds ``WorkerProc.wait_for_ready`` (same file), which
  waits for every worker's READY message without a timeout. It now waits at most
  ``VLLM_ENGINE_READY_TIMEOUT_S`` (vLLM's own start-up bound for the engine-core handshake,
  ``vllm/v1/engine/core_client.py``) and then raises :class:`WorkerStartupTimeout` naming the
  ranks, their pids, the step and what to check.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing.connection
import os
import time
from collections.abc import Iterator
from typing import Any

logger = logging.getLogger("vllm.ascend")

START_METHOD_ENV = "VLLM_WORKER_MULTIPROC_METHOD"
READY_TIMEOUT_ENV = "VLLM_ENGINE_READY_TIMEOUT_S"


class WorkerStartupTimeout(TimeoutError):
    """A worker process did not report READY to the executor within the start-up bound."""


def choose_worker_start_method(environ: dict[str, str] | None = None) -> str:
    """Make vLLM spawn (not fork) its engine-core, worker and DP processes; return the method.

    Sets ``VLLM_WORKER_MULTIPROC_METHOD=spawn`` in ``environ`` (default ``os.environ``, which
    is what ``vllm.envs`` reads) unless the user set it. An explicit ``fork`` is kept (vLLM's
    XPU platform does the same) with a warning: it hangs a worker whose parent process already
    ran torch work (libgomp) and cannot work on a real NPU once ACL is initialised.

    Raises:
        ValueError: the variable holds something other than ``fork`` or ``spawn``.
    """
    env = os.environ if environ is None else environ
    chosen = env.get(START_METHOD_ENV)
    if chosen is None:
        env[START_METHOD_ENV] = "spawn"
        logger.debug("vllm-ascend: %s=spawn (docs/worker-start.md)", START_METHOD_ENV)
        return "spawn"
    if chosen not in ("fork", "spawn"):
        raise ValueError(f"{START_METHOD_ENV}={chosen!r}: use 'spawn' (the Ascend default) or "
                         "'fork'")
    if chosen == "fork":
        logger.warning(
            "vllm-ascend: %s=fork: a worker forked from a process that already ran torch "
            "work hangs in its first OpenMP parallel region, and the NPU runtime does not "
            "survive fork; unset it to use spawn (docs/worker-start.md).", START_METHOD_ENV)
    return chosen


def ready_timeout_s() -> float:
    """Seconds ``WorkerProc.wait_for_ready`` waits for all workers (``VLLM_ENGINE_READY_TIMEOUT_S``,
    vLLM's default 600).

    Raises:
        ValueError: the variable is not a positive number of seconds.
    """
    raw = os.environ.get(READY_TIMEOUT_ENV)
    if raw is None:
        from vllm import envs as vllm_envs

        return float(vllm_envs.VLLM_ENGINE_READY_TIMEOUT_S)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{READY_TIMEOUT_ENV}={raw!r}: give a positive number of seconds, "
                         "e.g. 600")
    return value


RENDEZVOUS_CHECK = (
    "every rank must reach this step: read the other ranks' logs for an earlier error, check "
    "that they run (`ps`, `py-spy dump --pid`), and that the rendezvous address or file is "
    "reachable; --distributed-timeout-seconds sets this bound (torch's default for gloo: 30 min)"
)


@contextlib.contextmanager
def startup_step(rank: int, step: str, check: str = RENDEZVOUS_CHECK) -> Iterator[None]:
    """Name the worker's rank and start-up ``step`` in a timeout raised inside the block.

    torch reports a rendezvous that a peer never joins as a bare ``RuntimeError('Wait
    timeout')`` (FileStore) or ``DistStoreError('Timed out ...')`` (TCPStore); neither names
    the rank or the step. Other errors pass through unchanged.

    Raises:
        WorkerStartupTimeout: from a ``TimeoutError`` or an error whose message says it timed
            out, naming ``rank``, ``step`` and ``check``; the original is chained.
    """
    try:
        yield
    except Exception as exc:
        text = str(exc).lower()
        if isinstance(exc, TimeoutError) or "timeout" in text or "timed out" in text:
            raise WorkerStartupTimeout(
                f"vllm-ascend: rank {rank} timed out in start-up step {step}: "
                f"{type(exc).__name__}: {exc}. Check: {check}.") from exc
        raise


def _describe(handles: list[Any]) -> str:
    parts = []
    for h in sorted(handles, key=lambda h: h.rank):
        proc = h.proc
        state = "alive" if proc.is_alive() else f"exited with {proc.exitcode}"
        parts.append(f"rank {h.rank} (pid {proc.pid}, {state})")
    return ", ".join(parts)


def startup_timeout_message(pending: list[Any], ready: list[int], timeout_s: float) -> str:
    """The error text for workers that missed the READY bound (``pending``: unready handles)."""
    pids = " ".join(str(h.proc.pid) for h in pending)
    method = os.environ.get(START_METHOD_ENV, "fork")
    return (
        f"vllm-ascend: worker start-up timed out after {timeout_s:g} s "
        f"({READY_TIMEOUT_ENV}): {_describe(pending)} never reported READY"
        f"{'; ready: rank ' + ', '.join(map(str, ready)) if ready else ''}. "
        "Step: the worker's start-up before READY (WorkerProc.__init__ in "
        "vllm/v1/executor/multiproc_executor.py: init_device, i.e. the device, the "
        "torch.distributed rendezvous of all ranks and the model runner, then load_model). "
        f"Check: `py-spy dump --pid <pid>` for pids {pids}: a worker inside libgomp / "
        "at::parallel_for was forked from a process that had run torch work "
        f"({START_METHOD_ENV}={method}; use spawn, docs/worker-start.md); one inside "
        "init_process_group / a store wait has a peer that never joined (read that rank's log "
        "above); one loading weights is just slow: raise "
        f"{READY_TIMEOUT_ENV}."
    )


def bounded_wait_for_ready(unready_proc_handles: list[Any],
                           timeout_s: float | None = None) -> list[Any]:
    """``WorkerProc.wait_for_ready`` with a bound: wait for each worker's READY message.

    Same contract as vLLM 0.34's (``vllm/v1/executor/multiproc_executor.py``): returns the
    ready ``WorkerProcHandle`` list ordered by local rank; a worker that reports anything but
    READY, or whose pipe closes (it died), raises ``Exception`` as vLLM does.

    Raises:
        WorkerStartupTimeout: some worker did not answer within ``timeout_s`` (default
            :func:`ready_timeout_s`); the message names the ranks, pids, step and checks.
    """
    from vllm.v1.executor.multiproc_executor import WorkerProc

    limit = ready_timeout_s() if timeout_s is None else timeout_s
    deadline = time.monotonic() + limit
    failed = Exception("WorkerProc initialization failed due to an exception in a "
                       "background process. See stack trace for root cause.")
    pipes: dict[Any, Any] = {h.ready_pipe: h for h in unready_proc_handles}
    ready: list[Any] = [None] * len(unready_proc_handles)
    ready_ranks: list[int] = []
    while pipes:
        remaining = deadline - time.monotonic()
        answered: list[Any] = multiprocessing.connection.wait(list(pipes),  # ready pipes
                                                              timeout=max(remaining, 0))
        if not answered:
            raise WorkerStartupTimeout(
                startup_timeout_message(list(pipes.values()), ready_ranks, limit))
        for pipe in answered:
            handle = pipes.pop(pipe)
            try:
                response = pipe.recv()
                if response["status"] != "READY":
                    raise failed
                ready[handle.rank % len(ready)] = WorkerProc.wait_for_response_handle_ready(
                    response, handle)
                ready_ranks.append(handle.rank)
            except EOFError:
                failed.__suppress_context__ = True
                raise failed from None
            finally:
                pipe.close()
    return ready


def looks_like_vllm_wait_for_ready(target: Any) -> bool:
    import inspect

    from vllm.v1.executor.multiproc_executor import WorkerProc

    if target is bounded_wait_for_ready:  # already applied in this process
        return True
    params = list(inspect.signature(target).parameters)
    return params == ["unready_proc_handles"] and hasattr(
        WorkerProc, "wait_for_response_handle_ready")


# patch: worker-ready-timeout (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def apply_ready_timeout() -> None:
    from vllm.v1.executor.multiproc_executor import WorkerProc

    WorkerProc.wait_for_ready = staticmethod(bounded_wait_for_ready)
