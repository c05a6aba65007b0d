# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Our env vars reach Ray workers through the Ray runtime env (``ray_support``;
docs/architecture.md, "Environment facts").

Why the runtime env: vLLM 0.32's Ray executors copy the driver's variables into a worker only
after the actor resolved its platform (``vllm/v1/executor/ray_executor_v2.py``), so a cluster
started without ``VLLM_ASCEND_EMULATE`` would give workers vLLM's CPU platform. The engine test
``tests/e2e/test_parallel.py::test_ray_tp2_matches_tp1`` runs that case end to end.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from vllm_ascend_platform import envs
from vllm_ascend_platform.worker.ray_support import forward_env_to_ray_workers, ray_worker_env_vars


@pytest.fixture
def ascend_env(monkeypatch):
    for name in envs.ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.setenv("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "2GiB")
    monkeypatch.setenv("SOME_OTHER_VAR", "x")


def test_env_vars_forward_ours_that_are_set(ascend_env):
    assert ray_worker_env_vars(None) == {
        "VLLM_ASCEND_EMULATE": "1",
        "VLLM_ASCEND_EMULATE_DEVICE_MEMORY": "2GiB",
    }


def test_simulated_npu_mode_reaches_ray_workers(monkeypatch):
    """A Ray worker must install the simulator too: the mode variable and the negative-control
    switch travel in the runtime env."""
    for name in envs.ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "0")
    assert ray_worker_env_vars(None) == {"VLLM_ASCEND_SIMULATE_NPU": "1",
                                         "VLLM_ASCEND_GRAPH_PARAM_UPDATE": "0"}


def test_env_vars_explicit_runtime_env_wins_and_input_untouched(ascend_env):
    current = {"VLLM_ASCEND_EMULATE_DEVICE_MEMORY": "1GiB", "USER_VAR": "u"}
    merged = ray_worker_env_vars(current)
    assert merged == {
        "VLLM_ASCEND_EMULATE": "1",
        "VLLM_ASCEND_EMULATE_DEVICE_MEMORY": "1GiB",
        "USER_VAR": "u",
    }
    assert current == {"VLLM_ASCEND_EMULATE_DEVICE_MEMORY": "1GiB", "USER_VAR": "u"}


def test_forward_is_a_no_op_without_ray(ascend_env):
    config = SimpleNamespace(use_ray=False, ray_runtime_env=None)
    forward_env_to_ray_workers(config)
    assert config.ray_runtime_env is None


def test_forward_builds_a_runtime_env_keeping_other_fields(ascend_env):
    runtime_env = pytest.importorskip("ray.runtime_env")
    base = runtime_env.RuntimeEnv(env_vars={"USER_VAR": "u"}, config={"setup_timeout_seconds": 30})
    config = SimpleNamespace(use_ray=True, ray_runtime_env=base)
    forward_env_to_ray_workers(config)
    got = config.ray_runtime_env
    assert isinstance(got, runtime_env.RuntimeEnv)
    assert got.env_vars() == {
        "USER_VAR": "u",
        "VLLM_ASCEND_EMULATE": "1",
        "VLLM_ASCEND_EMULATE_DEVICE_MEMORY": "2GiB",
    }
    assert got["config"]["setup_timeout_seconds"] == 30


def test_forward_without_ray_installed_names_the_extra(ascend_env, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.runtime_env", None)  # import of it raises ImportError
    config = SimpleNamespace(use_ray=True, ray_runtime_env=None)
    with pytest.raises(ImportError, match=r"vllm-ascend\[ray\]"):
        forward_env_to_ray_workers(config)
