# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The emulated worker's thread plan (``vllm_ascend_platform.host.threads``) against vLLM's own.

The independent source is vLLM 0.34's ``OMPProcessManager._get_autobind_cpu_ids``
(``vllm/utils/ompmultiprocessing.py``), run on the same CPU topology with its CPU-list helpers
replaced by the topology under test: for ``VLLM_CPU_OMP_THREADS_BIND=auto`` our worker must run
as many threads as vLLM's CPU worker binds for that rank.
"""

from __future__ import annotations

import pytest
from vllm.utils import ompmultiprocessing
from vllm.utils.cpu_resource_utils import LogicalCPUInfo
from vllm_ascend_platform.host.threads import engine_has_own_process, plan


def _vllm_lists(cores: list[tuple[int, int]], world: int, reserve: int, monkeypatch):
    """vLLM's per-rank CPU lists for ``cores`` ((cpu, physical core), one NUMA node per rank)."""
    infos = [LogicalCPUInfo(id=cpu, physical_core=core, numa_node=0) for cpu, core in cores]
    mgr = ompmultiprocessing.OMPProcessManager.__new__(ompmultiprocessing.OMPProcessManager)
    mgr.local_world_size, mgr.reserve_cpu_num, mgr.simulate_multi_node = world, reserve, False
    mgr.local_dp_rank, mgr.internal_dp_size = 0, 1
    mgr.assigned_node_ids = None  # parallel_config.assigned_physical_gpu_ids: no DP assignment
    monkeypatch.setattr(ompmultiprocessing.cr_utils, "get_allowed_cpu_list", lambda: infos)
    monkeypatch.setattr(ompmultiprocessing.cr_utils, "get_visible_memory_node",
                        lambda assigned_node_ids=None: [0])
    lists, _ = mgr._get_autobind_cpu_ids(lambda cpus: cpus[-1:])  # vLLM's x86 selector
    return [[c.id for c in rank] for rank in lists]


@pytest.mark.parametrize("cores", [
    [(0, 0), (1, 1)],                              # this CI box: 2 cores, no SMT
    [(i, i // 2) for i in range(8)],               # 4 cores x SMT-2
    [(i, i) for i in range(16)],
    [(0, 0)],                                      # one CPU: nothing to reserve
])
@pytest.mark.parametrize("reserve", [None, 0, 2])
def test_auto_matches_vllm_cpu_worker(cores, reserve, monkeypatch):
    env = {} if reserve is None else {"VLLM_CPU_NUM_OF_RESERVED_CPU": str(reserve)}
    expected = _vllm_lists(cores, 1, 1 if reserve is None else reserve, monkeypatch)
    got = plan(0, 1, cores, env)
    assert got is not None and not got.pin
    assert list(got.cpus) == expected[0] and got.threads == len(expected[0])


def test_this_box_leaves_one_cpu():
    """2 CPUs, 1 worker: one thread, the other CPU for the API server and scheduler (vLLM's log
    on such a box: ``core ids=[0]``, ``reserved_cpus=[1]``)."""
    p = plan(0, 1, [(0, 0), (1, 1)], {})
    assert p is not None and p.threads == 1 and p.cpus == (0,)


def test_nobind_and_explicit_lists():
    assert plan(0, 1, [(0, 0), (1, 1)], {"VLLM_CPU_OMP_THREADS_BIND": "nobind"}) is None
    p = plan(1, 2, [], {"VLLM_CPU_OMP_THREADS_BIND": "0-3|4,6"})
    assert p is not None and p.pin and p.cpus == (4, 6) and p.threads == 2
    with pytest.raises(ValueError, match="VLLM_CPU_OMP_THREADS_BIND.*one '\\|'-separated list"):
        plan(0, 2, [], {"VLLM_CPU_OMP_THREADS_BIND": "0-3"})
    with pytest.raises(ValueError, match="VLLM_CPU_NUM_OF_RESERVED_CPU='x'"):
        plan(0, 1, [(0, 0), (1, 1)], {"VLLM_CPU_NUM_OF_RESERVED_CPU": "x"})


def test_only_when_the_engine_has_its_own_process():
    """vLLM binds for its multiprocessing executor, which its CPU platform picks unless
    ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` keeps the engine core in the caller's process."""
    assert engine_has_own_process("mp", {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    assert engine_has_own_process("uni", {})
    assert engine_has_own_process(None, {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    assert not engine_has_own_process("uni", {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    assert not engine_has_own_process("ray", {})


@pytest.mark.parametrize("emulate", ["1", "0"])
def test_cli_async_scheduling_default(emulate, monkeypatch):
    """On vLLM's own server parser: emulation defaults ``--async-scheduling`` to off (what
    ``vllm/platforms/cpu.py`` sets), an explicit flag still wins; otherwise vLLM's ``None``
    (resolved to on by ``VllmConfig``) is kept."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    from vllm_ascend_platform.startup.config_defaults import emulation_cli_defaults

    monkeypatch.setenv("VLLM_ASCEND_EMULATE", emulate)
    parser = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser())
    emulation_cli_defaults(parser)
    default = parser.parse_args(["--model", "m"]).async_scheduling
    assert default is (False if emulate == "1" else None)
    assert parser.parse_args(["--model", "m", "--async-scheduling"]).async_scheduling is True


@pytest.mark.parametrize("emulate", ["1", "0"])
@pytest.mark.parametrize("asked", [None, True, False])
def test_engine_args_async_scheduling_default(emulate, asked, monkeypatch):
    """Every front end (``LLM(...)`` has no parser): in emulation an unset ``async_scheduling``
    becomes off before ``create_engine_config`` builds the config; an explicit value is kept,
    and outside emulation nothing changes."""
    from types import SimpleNamespace

    from vllm_ascend_platform.startup.config_defaults import emulation_engine_defaults

    monkeypatch.setenv("VLLM_ASCEND_EMULATE", emulate)
    args = SimpleNamespace(async_scheduling=asked)
    emulation_engine_defaults(args)
    assert args.async_scheduling is (False if asked is None and emulate == "1" else asked)
