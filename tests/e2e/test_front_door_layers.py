"""The meta-package's general plugin (src/vllm_ascend/layers.py), in process.

Contract (docs/architecture.md, "How the plugin is found"): nothing happens unless our platform is current; the
layer-skew check names the mismatch; an installed layer without its register hook is
an error naming it; every registered layer is reported to the platform's startup_check.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import sys
import types

import pytest
from vllm_ascend_platform import patches, plugin, version_check

from vllm_ascend import layers


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    # Other e2e modules share this process and its engine set-up: vLLM loads general
    # plugins once per process, so the platform's record of registered layers must be
    # restored afterwards, not reset.
    saved = plugin._state
    monkeypatch.setattr(layers, "_done", False)
    plugin._reset_for_tests()
    monkeypatch.setattr(patches, "apply_patches", lambda *a: [])
    yield
    plugin._state = saved


def test_other_platform_does_nothing(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: False)
    calls = []
    monkeypatch.setattr(layers, "_register_layer", lambda layer: calls.append(layer))
    assert layers.register_all_layers() == {}
    assert calls == [] and plugin.layers_registered() is None


def test_our_platform_check_uses_the_platform_module(monkeypatch):
    import vllm.platforms

    fake = type("NPUPlatform", (), {})
    fake.__module__ = "vllm_ascend_platform.platform"
    monkeypatch.setattr(vllm.platforms, "_current_platform", fake())
    assert layers._our_platform_is_current() is True
    monkeypatch.setattr(vllm.platforms, "_current_platform", object())
    assert layers._our_platform_is_current() is False


def test_registers_installed_layers_and_tells_the_platform(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    installed = {"vllm-ascend-attention": "0.1.0", "vllm-ascend-models": "0.1.2"}
    called = []
    for key in ("attention", "models"):
        mod = types.ModuleType(f"vllm_ascend_{key}")
        # a real module has a spec; importlib.util.find_spec raises on a spec-less sys.modules entry
        mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, None)
        mod.register = lambda key=key: called.append(key)
        monkeypatch.setitem(sys.modules, f"vllm_ascend_{key}", mod)
    real = importlib.metadata.version

    def version(dist):
        if dist in installed:
            return installed[dist]
        if dist in ("vllm-ascend-comm", "vllm-ascend-graph"):
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(version_check, "layer_skew_problems", lambda: [])
    assert layers.register_all_layers() == {"attention": "0.1.0", "models": "0.1.2"}
    assert called == ["attention", "models"]  # attention first: models may import it
    assert plugin.layers_registered() == {"attention": "0.1.0", "models": "0.1.2"}
    assert layers.register_all_layers() == {"attention": "0.1.0", "models": "0.1.2"}
    assert called == ["attention", "models"]  # once per process


def test_installed_layer_without_hook_is_an_error(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    monkeypatch.setattr(version_check, "layer_skew_problems", lambda: [])
    monkeypatch.setitem(sys.modules, "vllm_ascend_attention", types.ModuleType("vllm_ascend_attention"))
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda d: "0.1.0" if d == "vllm-ascend-attention" else real(d))
    with pytest.raises(layers.LayerRegistrationError,
                       match=r"vllm-ascend-attention 0.1.0 is installed but has no "
                             r"vllm_ascend_attention:register\(\) hook"):
        layers.register_all_layers()
    assert plugin.layers_registered() is None


def test_layer_skew_stops_registration(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    monkeypatch.setattr(version_check, "layer_skew_problems",
                        lambda: ["layer vllm-ascend-comm 0.2.0 does not satisfy ..."])
    with pytest.raises(layers.LayerRegistrationError, match="vllm-ascend-comm 0.2.0"):
        layers.register_all_layers()
