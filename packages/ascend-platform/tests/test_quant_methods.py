# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The quantization methods are the models layer's facts (options/quant_methods.py): the platform serves
exactly what the layer providing ``quantization_methods`` / ``msmodelslim_method`` publishes, and
without such a layer refuses a quantized checkpoint naming the extra to install."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
import types
from types import SimpleNamespace

import pytest
from vllm_ascend_platform.options import quant_detect, quant_methods
from vllm_ascend_platform.startup import contract, layer_dists

FAKE = "fake_models_layer_for_quant"


def _layer(provides: dict[str, str]) -> dict:
    return {"name": "models", "distribution": "vllm-ascend-models", "version": "0.1.0",
            "vllm": ">=0.34,<0.35", "provides": provides}


@pytest.fixture
def publish(monkeypatch):
    """Install a fake models layer whose description publishes the given values."""
    def install(methods=None, msmodelslim=None):
        module = types.ModuleType(FAKE)
        provides = {}
        if methods is not None:
            module.METHODS = methods
            provides["quantization_methods"] = f"{FAKE}.METHODS"
        if msmodelslim is not None:
            module.MSMODELSLIM = msmodelslim
            provides["msmodelslim_method"] = f"{FAKE}.MSMODELSLIM"
        module.LAYER = _layer(provides)
        monkeypatch.setitem(sys.modules, FAKE, module)
        ep = importlib.metadata.EntryPoint("models", f"{FAKE}:LAYER", contract.ENTRY_POINT_GROUP)
        monkeypatch.setattr(contract, "_entry_points", lambda: [ep])
        monkeypatch.setattr(quant_methods, "_served", {})
        contract.clear_cache()
    yield install
    contract.clear_cache()


@pytest.fixture
def models_absent(monkeypatch, publish):
    publish()  # the only layer is a models layer that publishes no quantization role
    absent = layer_dists.Layer("models", "vllm-ascend-models")
    monkeypatch.setattr(layer_dists, "absent_layers", lambda: [absent])


def test_served_methods_are_what_the_models_layer_publishes(publish):
    # names the platform never spelled: it can only have them from the description
    publish(methods=("ascend-next", "compressed-tensors"))
    assert quant_methods.served() == ["ascend-next", "compressed-tensors"]
    # one list per process: vLLM's register_quantization_config appends to it in place
    quant_methods.served().append("plugin_method")
    assert quant_methods.served("x") == ["ascend-next", "compressed-tensors", "plugin_method"]


def test_without_the_models_layer_nothing_is_served(models_absent):
    assert quant_methods.served() == []
    with pytest.raises(contract.MissingLayerError) as err:
        quant_methods.served("--quantization compressed-tensors")
    msg = str(err.value)
    assert "'quantization_methods'" in msg and "--quantization compressed-tensors" in msg
    assert "vllm-ascend-models (pip install './[models]')" in msg


_PLATFORM_SCRIPT = """
import importlib.metadata, json, sys, types
from vllm_ascend_platform.startup import contract
from vllm_ascend_platform.startup import layer_dists
mod = types.ModuleType("fake_q")
mod.METHODS = ("ascend-next", "compressed-tensors")
mod.LAYER = {"name": "models", "distribution": "vllm-ascend-models", "version": "0.1.0",
             "vllm": ">=0.34,<0.35", "provides": {"quantization_methods": "fake_q.METHODS"}}
sys.modules["fake_q"] = mod
eps = [importlib.metadata.EntryPoint("models", "fake_q:LAYER", contract.ENTRY_POINT_GROUP)]
contract._entry_points = lambda: eps
from vllm_ascend_platform.platform import NPUPlatform
out = {}
def verify(method):
    try:
        NPUPlatform.verify_quantization(method)
        return "served"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
platform = NPUPlatform()
out["supported"] = list(platform.supported_quantization)
platform.supported_quantization.append("plugin_method")  # as register_quantization_config does
out["after_append"] = list(platform.supported_quantization)
out["verify"] = {m: verify(m) for m in ("ascend-next", "plugin_method", "ascend")}
eps.clear(); contract.clear_cache()
layer_dists.absent_layers = lambda: [layer_dists.Layer("models", "vllm-ascend-models")]
out["absent_supported"] = NPUPlatform().supported_quantization
out["absent_verify"] = verify("compressed-tensors")
print("RESULT " + json.dumps(out))
"""


def test_the_platform_serves_what_the_description_publishes_and_nothing_else():
    # NPUPlatform fixes its mode at import (and applies the emulation patch): a child process
    env = {**os.environ, "VLLM_ASCEND_EMULATE": "1"}
    env.pop("VLLM_ASCEND_SIMULATE_NPU", None)
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(_PLATFORM_SCRIPT)], env=env,
                         capture_output=True, text=True, timeout=300)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["supported"] == ["ascend-next", "compressed-tensors"]
    assert out["after_append"] == ["ascend-next", "compressed-tensors", "plugin_method"]
    assert out["verify"]["ascend-next"] == "served" and out["verify"]["plugin_method"] == "served"
    assert out["verify"]["ascend"].startswith("ValueError: vllm-ascend does not serve "
                                              "--quantization ascend")
    assert "Served methods: ascend-next, compressed-tensors, plugin_method" in out["verify"]["ascend"]
    assert out["absent_supported"] == []
    absent = out["absent_verify"]
    assert absent.startswith("MissingLayerError: ") and "'quantization_methods'" in absent
    assert "--quantization compressed-tensors" in absent and "pip install './[models]'" in absent


def _msmodelslim_config(tmp_path):
    (tmp_path / quant_detect.DESCRIPTION_FILE).write_text("{}")
    return SimpleNamespace(model_config=SimpleNamespace(
        quantization=None, hf_config=SimpleNamespace(), model=str(tmp_path), revision=None),
        load_config=None, quant_config=None)


def test_msmodelslim_checkpoint_without_the_models_layer_is_refused(models_absent, tmp_path):
    with pytest.raises(contract.MissingLayerError) as err:
        quant_detect.detect_msmodelslim(_msmodelslim_config(tmp_path))
    msg = str(err.value)
    assert "'msmodelslim_method'" in msg and str(tmp_path) in msg
    assert "pip install './[models]'" in msg
    # a float checkpoint needs no models layer for this check
    assert not quant_detect.detect_msmodelslim(SimpleNamespace(model_config=SimpleNamespace(
        quantization=None, hf_config=SimpleNamespace(), model=str(tmp_path / "x"),
        revision=None)))


def test_msmodelslim_checkpoint_gets_the_published_method(publish, tmp_path, monkeypatch):
    from vllm.config import VllmConfig

    publish(methods=("ascend-next",), msmodelslim="ascend-next")
    built = []
    monkeypatch.setattr(VllmConfig, "_get_quantization_config",
                        staticmethod(lambda mc, lc: built.append(mc.quantization) or "qcfg"))
    cfg = _msmodelslim_config(tmp_path)
    assert quant_detect.detect_msmodelslim(cfg)
    assert cfg.model_config.quantization == "ascend-next" and built == ["ascend-next"]
    assert cfg.quant_config == "qcfg"


@pytest.mark.parametrize("methods,msmodelslim,role", [
    (["ascend"], None, "quantization_methods"),      # a list, not a tuple
    (("ascend", 8), None, "quantization_methods"),   # not only names
    (None, ("ascend",), "msmodelslim_method"),        # a tuple, not a name
])
def test_a_published_value_of_the_wrong_type_is_refused(publish, methods, msmodelslim, role):
    publish(methods=methods, msmodelslim=msmodelslim)
    with pytest.raises(contract.ContractError, match=f"role '{role}'.*not a"):
        contract.provided_value(role)


@pytest.mark.requires_meta
def test_the_installed_models_layer_serves_ascend_and_compressed_tensors():
    contract.clear_cache()
    assert quant_methods.served()[:2] == ["ascend", "compressed-tensors"]
    assert quant_methods.msmodelslim_method("this test") == "ascend"
