# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""connect_graph_param_updates: the hook one layer publishes reaches the registrar another
publishes, both read from the layers' descriptions; VLLM_ASCEND_GRAPH_PARAM_UPDATE=0 leaves it
unregistered."""

from __future__ import annotations

import sys
import types

import pytest
from vllm_ascend_platform.startup import contract, layers


@pytest.fixture
def fakes(monkeypatch):
    registered = []
    attention = types.ModuleType("fake_attention_layer")
    attention.update = lambda params: 0
    graph = types.ModuleType("fake_graph_layer")
    graph.register = registered.append
    graph.unregister = lambda hook: registered.remove(hook) if hook in registered else None
    monkeypatch.setitem(sys.modules, "fake_attention_layer", attention)
    monkeypatch.setitem(sys.modules, "fake_graph_layer", graph)
    descriptions = tuple(contract.validate(d, "test") for d in (
        {"name": "attention", "distribution": "fake-attention", "version": "0.1.0",
         "vllm": ">=0.34,<0.35",
         "provides": {"graph_param_update_hook": "fake_attention_layer.update"}},
        {"name": "graph", "distribution": "fake-graph", "version": "0.1.0", "vllm": ">=0.34,<0.35",
         "provides": {"graph_param_hook_register": "fake_graph_layer.register",
                      "graph_param_hook_unregister": "fake_graph_layer.unregister"}},
    ))
    monkeypatch.setattr(contract, "installed_layers", lambda: descriptions)
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
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "off")
    assert layers.connect_graph_param_updates() is False
    assert registered == []


def test_bad_switch_value_is_named(fakes, monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_GRAPH_PARAM_UPDATE", "maybe")
    with pytest.raises(ValueError, match="VLLM_ASCEND_GRAPH_PARAM_UPDATE"):
        layers.connect_graph_param_updates()


def test_no_graph_layer_means_no_wiring(monkeypatch):
    monkeypatch.setattr(contract, "installed_layers", lambda: ())
    assert layers.connect_graph_param_updates() is False
