"""connect_graph_param_updates: the attention layer's hook reaches the graph layer's registrar,
both named by strings only; VLLM_ASCEND_GRAPH_PARAM_UPDATE=0 leaves it unregistered."""

from __future__ import annotations

import sys
import types

import pytest
from vllm_ascend_platform import layers


@pytest.fixture
def fakes(monkeypatch):
    registered = []
    attention = types.ModuleType("fake_attention_layer")
    attention.GRAPH_PARAM_UPDATE_HOOK = "fake_attention_layer.update"
    attention.update = lambda params: 0
    graph = types.ModuleType("fake_graph_layer")
    graph.register = registered.append
    graph.unregister = lambda hook: registered.remove(hook) if hook in registered else None
    monkeypatch.setitem(sys.modules, "fake_attention_layer", attention)
    monkeypatch.setitem(sys.modules, "fake_graph_layer", graph)
    names = {"vllm_ascend_attention": attention, "vllm_ascend_graph": graph}
    monkeypatch.setattr(layers, "import_optional", names.get)
    monkeypatch.setattr(layers, "GRAPH_PARAM_HOOK_REGISTRAR", "fake_graph_layer.register")
    monkeypatch.setattr(layers, "GRAPH_PARAM_HOOK_UNREGISTRAR", "fake_graph_layer.unregister")
    return registered, attention


def test_hook_is_registered_by_name(fakes, monkeypatch):
    registered, attention = fakes
    monkeypatch.delenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", raising=False)
    assert layers.connect_graph_param_updates() is True
    assert registered == [attention.update]


def test_switch_off_is_a_negative_control(fakes, monkeypatch):
    registered, attention = fakes
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "0")
    assert layers.connect_graph_param_updates() is False
    assert registered == []
    # switching off after an earlier registration in the same process removes the hook again
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "1")
    assert layers.connect_graph_param_updates() is True
    assert registered == [attention.update]
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "0")
    assert layers.connect_graph_param_updates() is False
    assert registered == []


def test_bad_switch_value_is_named(fakes, monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "maybe")
    with pytest.raises(ValueError, match="VLLM_ASCEND_GRAPH_PARAM_UPDATE"):
        layers.connect_graph_param_updates()
