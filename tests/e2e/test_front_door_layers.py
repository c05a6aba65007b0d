# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The meta-package's general plugin (src/vllm_ascend/layers.py), in process.

Contract (docs/architecture.md, "How the plugin is found" and "The layer contract"): nothing
happens unless our platform is current; the layer-skew check and the vLLM version check name the
mismatch; each installed layer's published register hook runs once, in description order; a
layer whose hook cannot be imported is an error naming it; every registered layer is reported
to the platform's startup_check.
"""

from __future__ import annotations

import sys
import types

import pytest
from vllm_ascend_platform.patches import registry as patches
from vllm_ascend_platform.startup import contract, plugin, version_check

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
    version_check._reset_for_tests()


def test_other_platform_does_nothing(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: False)
    calls = []
    monkeypatch.setattr(layers, "_register_layer", lambda desc: calls.append(desc))
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


def _fake_layers(monkeypatch, names, hook_module=None):
    """Install descriptions for fake layers ``names`` whose register hooks record their calls."""
    called = []
    module = types.ModuleType("fake_layer_hooks")
    descriptions = []
    for name in names:
        setattr(module, f"register_{name}", lambda name=name: called.append(name))
        descriptions.append(contract.validate({
            "name": name, "distribution": f"vllm-ascend-{name}", "version": "0.2.2",
            "vllm": ">=0.34,<0.35", "after": ("attention",) if name == "models" else (),
            "provides": {"register": f"{hook_module or module.__name__}.register_{name}"},
        }, "test"))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(contract, "installed_layers", lambda: tuple(descriptions))
    monkeypatch.setattr(version_check, "layer_skew_problems", lambda: [])
    monkeypatch.setattr(version_check, "layer_statuses", lambda: [])
    return called


def test_registers_installed_layers_and_tells_the_platform(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    called = _fake_layers(monkeypatch, ["attention", "models"])
    assert layers.register_all_layers() == {"attention": "0.2.2", "models": "0.2.2"}
    assert called == ["attention", "models"]  # attention first: models may import it
    assert plugin.layers_registered() == {"attention": "0.2.2", "models": "0.2.2"}
    assert layers.register_all_layers() == {"attention": "0.2.2", "models": "0.2.2"}
    assert called == ["attention", "models"]  # once per process


def test_layer_whose_hook_cannot_be_imported_is_an_error(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    _fake_layers(monkeypatch, ["attention"], hook_module="no_such_layer_module")
    with pytest.raises(layers.LayerRegistrationError,
                       match=r"vllm-ascend-attention 0.2.2: its register hook "
                             r"no_such_layer_module.register_attention cannot be imported"):
        layers.register_all_layers()
    assert plugin.layers_registered() is None


def test_unsupported_vllm_stops_registration_naming_the_layer(monkeypatch):
    import vllm

    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    called = _fake_layers(monkeypatch, ["comm"])
    monkeypatch.setattr(vllm, "__version__", "0.31.0")
    monkeypatch.delenv("VLLM_ASCEND_SKIP_VERSION_CHECK", raising=False)
    version_check._reset_for_tests()
    with pytest.raises(layers.LayerRegistrationError,
                       match=r"vllm-ascend-comm 0.2.2 \(supports vLLM >=0.34,<0.35\)"):
        layers.register_all_layers()
    assert called == []


def test_layer_skew_stops_registration(monkeypatch):
    monkeypatch.setattr(layers, "_our_platform_is_current", lambda: True)
    monkeypatch.setattr(version_check, "layer_skew_problems",
                        lambda: ["layer vllm-ascend-comm 0.3.0 does not satisfy ..."])
    with pytest.raises(layers.LayerRegistrationError, match="vllm-ascend-comm 0.3.0"):
        layers.register_all_layers()
