# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The platform plugin decision and startup_check (docs/architecture.md, "How the plugin is found").

The plugin's contract comes from docs/architecture.md and vLLM 0.32's
``vllm/platforms/__init__.py`` (register() exceptions are swallowed, so a wanted
but broken start must exit) and ``vllm/plugins/__init__.py`` (VLLM_PLUGINS is an
allowlist split on ",").
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from types import SimpleNamespace

import pytest
import vllm_ascend_platform
from vllm_ascend_platform.options.refusal import UnsupportedFeatureError
from vllm_ascend_platform.patches import registry as patches
from vllm_ascend_platform.startup import plugin
from vllm_ascend_platform.startup.config import AscendConfigError


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    plugin._reset_for_tests()
    for var in ("VLLM_ASCEND_EMULATE", "VLLM_ASCEND_SIMULATE_NPU", "VLLM_PLUGINS",
                "VLLM_ASCEND_SKIP_VERSION_CHECK"):
        monkeypatch.delenv(var, raising=False)
    yield
    plugin._reset_for_tests()


def _no_torch_npu(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch_npu" else real(name, *a))


def test_not_wanted_returns_none_and_logs_once(monkeypatch, caplog):
    _no_torch_npu(monkeypatch)
    with caplog.at_level(logging.INFO, logger="vllm.ascend"):
        assert plugin.platform_plugin() is None
        assert plugin.platform_plugin() is None  # vLLM calls it twice per process
    lines = [r.getMessage() for r in caplog.records if r.name == "vllm.ascend"]
    assert len(lines) == 1
    assert "inactive" in lines[0] and "VLLM_ASCEND_EMULATE=1" in lines[0]
    assert plugin.current_mode() is None


@pytest.mark.requires_meta
def test_emulation_activates_without_importing_torch_npu(monkeypatch, caplog):
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # any import attempt would raise
    with caplog.at_level(logging.INFO, logger="vllm.ascend"):
        assert plugin.platform_plugin() == "vllm_ascend_platform.platform.NPUPlatform"
    assert plugin.current_mode() == "emulation"
    assert "emulation mode" in caplog.text and "vllm.platform_plugins: [ascend]" in caplog.text


@pytest.mark.requires_meta
def test_simulated_npu_activates_in_its_own_mode(monkeypatch, caplog):
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    monkeypatch.setattr(plugin, "_has_simulator", lambda: True)
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # the real torch_npu is never wanted
    with caplog.at_level(logging.INFO, logger="vllm.ascend"):
        assert plugin.platform_plugin() == "vllm_ascend_platform.platform.NPUPlatform"
    assert plugin.current_mode() == "simulated-npu"
    assert "simulated-npu mode" in caplog.text


def test_simulated_npu_with_emulation_exits(monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    with pytest.raises(SystemExit, match="VLLM_ASCEND_EMULATE=1 and VLLM_ASCEND_SIMULATE_NPU=1"):
        plugin.platform_plugin()


def test_simulated_npu_without_simulator_exits(monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    monkeypatch.setattr(plugin, "_has_simulator", lambda: False)
    with pytest.raises(SystemExit, match="needs ascend_ops.simulator"):
        plugin.platform_plugin()


def test_log_without_vllm_logging_goes_to_stderr(monkeypatch, capsys):
    from vllm_ascend_platform.startup import log as startup_log

    monkeypatch.setattr(startup_log.logger, "hasHandlers", lambda: False)
    startup_log.log(logging.INFO, "vllm-ascend: %s", "hello")
    startup_log.log(logging.DEBUG, "vllm-ascend: hidden")
    assert capsys.readouterr().err == "INFO vllm-ascend: hello\n"


def test_bad_emulate_value_exits(monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "maybe")
    with pytest.raises(SystemExit, match="VLLM_ASCEND_EMULATE='maybe'"):
        plugin.platform_plugin()


def test_unsupported_vllm_exits_in_one_line(monkeypatch):
    import vllm

    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.setattr(vllm, "__version__", "0.30.0")
    with pytest.raises(SystemExit) as err:
        plugin.platform_plugin()
    msg = str(err.value.code)
    assert "\n" not in msg and "vLLM 0.30.0 is installed" in msg
    assert f"vllm-ascend-platform {vllm_ascend_platform.__version__} (supports vLLM >=0.34,<0.35)" in msg


def test_unsupported_vllm_with_skip_warns_and_runs(monkeypatch, caplog):
    import vllm

    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.setenv("VLLM_ASCEND_SKIP_VERSION_CHECK", "1")
    monkeypatch.setattr(vllm, "__version__", "0.30.0")
    with caplog.at_level(logging.WARNING, logger="vllm.ascend"):
        assert plugin.platform_plugin() is not None
    assert "running anyway" in caplog.text and "0.30.0" in caplog.text


def test_dev_build_of_supported_release_accepted(monkeypatch):
    import vllm

    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.setattr(vllm, "__version__", "0.34.1.dev12+gabc123")
    assert plugin.platform_plugin() is not None


def test_torch_npu_that_fails_to_import_exits(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "torch_npu" else real(name, *a))
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # import torch_npu -> ImportError
    with pytest.raises(SystemExit) as err:
        plugin.platform_plugin()
    msg = str(err.value.code)
    assert "torch_npu is installed but failed to import" in msg and "set_env.sh" in msg


def test_no_visible_npu_exits(monkeypatch):
    import torch

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "torch_npu" else real(name, *a))
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    monkeypatch.setattr(torch, "npu", SimpleNamespace(is_available=lambda: False,
                                                      device_count=lambda: 0), raising=False)
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "7")
    with pytest.raises(SystemExit, match="no NPU is visible.*ASCEND_RT_VISIBLE_DEVICES=7"):
        plugin.platform_plugin()


@pytest.mark.requires_meta
def test_plugin_selection_follows_vllm_allowlist():
    sel = plugin.plugin_selection("")
    assert sel.loaded.get("vllm.platform_plugins", []) == []
    assert sel.loaded.get("vllm.general_plugins", []) == []
    assert sel.unknown == []
    sel = plugin.plugin_selection("ascend,ascend_layrs")
    assert sel.loaded["vllm.platform_plugins"] == ["ascend"]
    assert "ascend_layers" not in sel.loaded["vllm.general_plugins"]
    assert sel.unknown == ["ascend_layrs"]
    sel = plugin.plugin_selection(None, use_environ=False)
    assert "ascend_layers" in sel.loaded["vllm.general_plugins"]


@pytest.mark.requires_meta
def test_misspelled_plugin_recorded_and_raised_by_startup_check(monkeypatch, caplog):
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.setenv("VLLM_PLUGINS", "ascend,ascend_layers,ascend_layrs")
    with caplog.at_level(logging.ERROR, logger="vllm.ascend"):
        plugin.platform_plugin()
    assert "'ascend_layrs'" in caplog.text and "ascend_layers" in caplog.text
    plugin.mark_layers_registered({"attention": "0.1.0"})
    with pytest.raises(plugin.AscendStartupError) as err:
        plugin.startup_check(SimpleNamespace(additional_config={}, model_config=None))
    msg = str(err.value)
    assert "VLLM_PLUGINS names 'ascend_layrs'" in msg
    assert "vllm.general_plugins: ascend_layers" in msg  # lists the discovered ones


def test_startup_check_refuses_platform_without_layers_plugin(monkeypatch):
    import vllm.plugins

    monkeypatch.setenv("VLLM_PLUGINS", "ascend")
    monkeypatch.setattr(vllm.plugins, "plugins_loaded", False)
    with pytest.raises(plugin.AscendStartupError) as err:
        plugin.startup_check(SimpleNamespace(additional_config={}, model_config=None))
    msg = str(err.value)
    assert "layers are not registered" in msg and "VLLM_PLUGINS=ascend,ascend_layers" in msg


def test_startup_check_passes_then_parses_config_and_features():
    plugin.mark_layers_registered({"attention": "0.1.0"})
    c = plugin.startup_check(SimpleNamespace(additional_config={}, model_config=None))
    assert c.enable_weight_nz is False
    with pytest.raises(AscendConfigError, match="enable_weight_nz"):
        plugin.startup_check(SimpleNamespace(additional_config={"enable_weigth_nz": True}))
    with pytest.raises(UnsupportedFeatureError, match="FRACTAL_NZ"):
        plugin.startup_check(SimpleNamespace(additional_config={"enable_weight_nz": True},
                                             model_config=None))


def test_startup_check_refuses_version_and_drift(monkeypatch):
    import vllm

    plugin.mark_layers_registered({})
    monkeypatch.setattr(vllm, "__version__", "0.31.0")
    monkeypatch.setattr(patches, "drift_problems", lambda: ["patch x drifted"])
    with pytest.raises(plugin.AscendStartupError) as err:
        plugin.startup_check(SimpleNamespace(additional_config={}))
    assert "vLLM 0.31.0 is installed" in str(err.value) and "patch x drifted" in str(err.value)
