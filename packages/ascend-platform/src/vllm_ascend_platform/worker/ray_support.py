# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ray executor support: our env vars reach Ray workers before they import vLLM.

With ``--distributed-executor-backend ray`` the workers are Ray actors started by the raylet, so
they inherit the environment of whoever started the cluster (``ray start`` in some shell), not
the engine's. vLLM copies the driver's variables (``additional_env_vars``, ``VLLM_*``) into a
worker only in ``initialize_worker`` / ``update_environment_variables``, i.e. after the actor
already resolved ``current_platform`` (``get_node_and_physical_gpu_ids`` reads
``ray_device_key`` first; ``vllm/v1/executor/ray_executor_v2.py`` and ``ray_executor.py`` of
vLLM 0.32). A worker missing ``VLLM_ASCEND_EMULATE`` would therefore pick vLLM's CPU platform and
fail with "current platform cpu does not support ray".

The one channel that is applied when the actor process starts is its Ray ``runtime_env``:
``RayExecutorV2._build_runtime_env`` starts from ``parallel_config.ray_runtime_env``, and
``initialize_ray_cluster`` passes it to ``ray.init`` (job level) when vLLM starts Ray itself.
So :func:`forward_env_to_ray_workers` adds our variables there.
"""

from __future__ import annotations

import os
from typing import Any

from vllm_ascend_platform import envs


def ray_worker_env_vars(current: dict[str, str] | None) -> dict[str, str]:
    """``env_vars`` for the Ray workers' runtime env: ``current`` plus our variables.

    Args:
        current: the ``env_vars`` already in the runtime env (``None`` when there is none).

    Returns:
        A new dict: every ``VLLM_ASCEND_*`` variable of ``envs.ENVIRONMENT_VARIABLES`` that is set
        in this process, unless ``current`` names it already (an explicit runtime env wins).
    """
    merged = dict(current or {})
    for name in envs.ENVIRONMENT_VARIABLES:
        if name in os.environ:
            merged.setdefault(name, os.environ[name])
    return merged


def forward_env_to_ray_workers(parallel_config: Any) -> None:
    """When ``parallel_config`` uses Ray, put our variables into its ``ray_runtime_env``.

    A no-op for the other executors. Replaces ``parallel_config.ray_runtime_env`` by a
    ``ray.runtime_env.RuntimeEnv`` holding the old fields and the merged ``env_vars``.

    Raises:
        ImportError: Ray is selected but not installed (names the ``vllm-ascend[ray]`` extra).
    """
    if not parallel_config.use_ray:
        return
    try:
        from ray.runtime_env import RuntimeEnv
    except ImportError as exc:
        raise ImportError(
            "--distributed-executor-backend ray needs Ray: pip install 'vllm-ascend[ray]'"
        ) from exc
    base = dict(parallel_config.ray_runtime_env or {})
    base["env_vars"] = ray_worker_env_vars(base.get("env_vars"))
    parallel_config.ray_runtime_env = RuntimeEnv(**base)
