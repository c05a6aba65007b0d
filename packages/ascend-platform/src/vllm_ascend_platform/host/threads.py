# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""How many torch (OpenMP) threads the emulated device's worker runs, and on which CPUs.

In CPU emulation the "device" is the host's cores, and the worker's intra-op threads share them
with the engine core's scheduler and I/O threads and with the API server. vLLM's own CPU platform
sizes and binds its worker's OpenMP threads for that reason (``OMPProcessManager``,
``vllm/utils/ompmultiprocessing.py``, used by the multiprocessing executor, which
``vllm/platforms/cpu.py`` picks whenever the engine core has its own process): with
``VLLM_CPU_OMP_THREADS_BIND=auto`` (vLLM's default) each local rank gets one logical CPU per
physical core of its share, and ``VLLM_CPU_NUM_OF_RESERVED_CPU`` CPUs (default: one per local
rank) are left to the other processes; ``nobind`` leaves the threads alone; a list such as
``0-3|4-7`` names each local rank's CPUs.

Without that reservation an engine serving requests runs as many OpenMP threads as there are
cores while its API server and scheduler need one of them: every parallel region then waits for
a descheduled thread at its barrier (measured in ``benchmarks/serve_bench.py``, see
``benchmarks/README.md``). :func:`plan` mirrors vLLM's rules; :func:`apply` sets the thread count
(``torch.set_num_threads``) and, for an explicit list only, the affinity. With ``auto`` the
threads are not pinned: our single-worker engine keeps vLLM's uniprocess executor, so the
worker's main thread is also the engine core's scheduler thread and the parent of its I/O
threads, which an affinity mask would confine to the worker's CPUs as well.

Applied in CPU emulation only; the NPU and the simulated NPU never call it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping

logger = logging.getLogger("vllm.ascend")

BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"
RESERVED_ENV = "VLLM_CPU_NUM_OF_RESERVED_CPU"
MULTIPROC_ENV = "VLLM_ENABLE_V1_MULTIPROCESSING"


@dataclasses.dataclass(frozen=True)
class ThreadPlan:
    """The worker's share of the host: ``threads`` intra-op threads, pinned to ``cpus`` when
    ``pin`` (an explicit ``VLLM_CPU_OMP_THREADS_BIND`` list), else placed by the kernel."""

    threads: int
    cpus: tuple[int, ...]
    pin: bool


def engine_has_own_process(executor_backend: object, environ: Mapping[str, str]) -> bool:
    """Whether vLLM's CPU platform would bind this worker's threads: the multiprocessing
    executor, or the uniprocess one inside an engine-core process (``VLLM_ENABLE_V1_MULTIPROCESSING``
    unset or ``1``, which ``vllm/platforms/cpu.py`` turns into the multiprocessing executor).
    ``executor_backend`` is ``ParallelConfig.distributed_executor_backend`` (a name, a class or
    ``None``); Ray and custom executors are left alone."""
    if executor_backend == "mp":
        return True
    return executor_backend in (None, "uni") and environ.get(MULTIPROC_ENV, "1") == "1"


def plan(local_rank: int, local_world_size: int, cores: list[tuple[int, int]],
         environ: Mapping[str, str]) -> ThreadPlan | None:
    """The thread plan for ``local_rank`` of ``local_world_size`` on the allowed ``cores``
    (``(cpu id, physical core id)`` pairs), or ``None`` to leave the threads as they are.

    Raises:
        ValueError: ``VLLM_CPU_OMP_THREADS_BIND`` is a list whose number of ``|``-separated
            entries is not ``local_world_size``, or ``VLLM_CPU_NUM_OF_RESERVED_CPU`` is not a
            non-negative integer.
    """
    mask = environ.get(BIND_ENV, "auto")
    if mask == "nobind":
        return None
    if mask != "auto":
        from vllm.utils.cpu_resource_utils import parse_id_list

        entries = mask.split("|")
        if len(entries) != local_world_size:
            raise ValueError(f"{BIND_ENV}={mask!r} names {len(entries)} CPU lists for "
                             f"{local_world_size} local ranks: give one '|'-separated list per "
                             "rank, 'auto' or 'nobind'")
        cpus = tuple(parse_id_list(entries[local_rank]))
        return ThreadPlan(threads=len(cpus), cpus=cpus, pin=True)
    raw = environ.get(RESERVED_ENV)
    if raw is None:
        reserve = local_world_size
    elif raw.isdigit():
        reserve = int(raw)
    else:
        raise ValueError(f"{RESERVED_ENV}={raw!r}: give a non-negative number of CPUs")
    # one logical CPU per physical core (the last, as vLLM picks on x86)
    per_core: dict[int, int] = {}
    for cpu, core in sorted(cores):
        per_core[core] = cpu
    chosen = sorted(per_core.values())
    share = max(len(chosen) // local_world_size, 1)
    ranks = [chosen[r * share:(r + 1) * share] or chosen[-1:] for r in range(local_world_size)]
    if len(chosen) > reserve:  # vLLM reserves from the last ranks first
        take = [reserve // local_world_size] * local_world_size
        for r in range(local_world_size - 1, local_world_size - 1 - reserve % local_world_size, -1):
            take[r] += 1
        ranks = [cpus[:len(cpus) - n] if n < len(cpus) else cpus[:1] for cpus, n in zip(ranks, take, strict=True)]
    cpus = tuple(ranks[local_rank])
    return ThreadPlan(threads=len(cpus), cpus=cpus, pin=False)


def apply(local_rank: int, local_world_size: int, executor_backend: object) -> ThreadPlan | None:
    """Size (and for an explicit list, pin) this worker's torch threads as vLLM's CPU worker
    would; returns the plan applied, or ``None`` when nothing was changed."""
    import torch
    from vllm.utils.cpu_resource_utils import get_allowed_cpu_list

    if not engine_has_own_process(executor_backend, os.environ):
        return None
    cores = [(c.id, c.physical_core) for c in get_allowed_cpu_list()]
    chosen = plan(local_rank, local_world_size, cores, os.environ)
    if chosen is None:
        return None
    if chosen.pin:
        os.sched_setaffinity(0, chosen.cpus)
    torch.set_num_threads(chosen.threads)
    logger.info("vllm-ascend: worker rank %d runs %d torch threads (%s %s; %s)", local_rank,
                chosen.threads, "pinned to CPUs" if chosen.pin else "sized for CPUs",
                list(chosen.cpus), f"{BIND_ENV}={os.environ.get(BIND_ENV, 'auto')}")
    return chosen
