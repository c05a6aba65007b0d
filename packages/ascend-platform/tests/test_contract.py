# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The layer contract (docs/architecture.md, "The layer contract"): every installed layer's
description validates and everything it publishes resolves; malformed descriptions are refused
naming the field; the platform's source never imports a layer module nor re-types a layer path.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import types
from pathlib import Path

import pytest
import tomllib
from pydantic import BaseModel
from vllm_ascend_platform.startup import contract

PLATFORM_SRC = Path(contract.__file__).parents[1]
ROOT = PLATFORM_SRC.parents[3]
LAYER_MODULES = ("vllm_ascend_attention", "vllm_ascend_comm", "vllm_ascend_graph",
                 "vllm_ascend_models")


def _desc(name="seventh", **overrides):
    data = {"name": name, "distribution": f"vllm-ascend-{name}", "version": "0.1.0",
            "vllm": ">=0.34,<0.35", "provides": {}}
    data.update(overrides)
    return data


# ------------------------------------------------------------------ the installed layers
def _meta_layers() -> dict[str, str]:
    """extra -> distribution of every vLLM-facing layer, from the meta-package's pyproject."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return {key: re.split(r"[<>=!~ ;\[]", reqs[0], maxsplit=1)[0]
            for key, reqs in extras.items()
            if len(reqs) == 1 and reqs[0].startswith("vllm-ascend-")}


@pytest.mark.requires_meta
def test_every_layer_the_meta_package_names_publishes_a_valid_description():
    installed = {d.name: d for d in contract.installed_layers()}
    expected = _meta_layers()
    assert set(expected) == {"attention", "comm", "graph", "models"}
    assert set(installed) == set(expected)
    for name, dist in expected.items():
        desc = installed[name]
        assert desc.distribution == dist
        assert desc.version == importlib.metadata.version(dist)
        assert "register" in desc.provides  # registration is uniform: every layer has the hook


@pytest.mark.requires_meta
def test_the_platform_resolves_every_published_name():
    for desc in contract.installed_layers():
        for role, qualname in desc.provides.items():
            obj = contract.resolve(qualname)
            if role in contract.DATA_ROLES:  # a value, of the role's type
                assert contract.provided_value(role) is obj, (desc.name, role, qualname)
            elif role in contract.HOOKS or role.endswith(("_hook", "_register", "_unregister",
                                                       "_selector", "_kernels", "_priority",
                                                       "_process_group")):
                assert callable(obj), (desc.name, role, qualname)
            else:
                assert isinstance(obj, type), (desc.name, role, qualname)
        if desc.options is not None:
            model = contract.resolve(desc.options.model)
            assert issubclass(model, BaseModel)
            model()  # every section has defaults: omitting it from additional_config is valid


@pytest.mark.requires_meta
def test_models_registers_after_attention():
    order = [d.name for d in contract.installed_layers()]
    assert order.index("attention") < order.index("models")


@pytest.mark.requires_meta
def test_ascend_config_has_each_layer_section_once():
    from vllm_ascend_platform.startup.config import AscendConfig, ascend_config_model

    model = ascend_config_model()
    sections = {d.options.section: d for d in contract.installed_layers() if d.options}
    assert set(model.model_fields) == set(AscendConfig.model_fields) | set(sections)
    for section, desc in sections.items():
        assert model.model_fields[section].annotation is contract.resolve(desc.options.model)


# ------------------------------------------------------------------ malformed descriptions
@pytest.mark.parametrize("override,field,fragment", [
    ({"provides": {"communicator": "a.b.C"}}, "description", "unknown role 'communicator'"),
    ({"provides": {"device_communicator": "NPUCommunicator"}}, "description",
     "is not a qualified name"),
    ({"vllm": "0.32"}, "vllm", "PEP 440 specifier"),
    ({"version": "one"}, "version", "PEP 440 version"),
    ({"name": "Seventh"}, "name", "lower-case identifier"),
    ({"extra_key": 1}, "extra_key", "Extra inputs are not permitted"),
    ({"provides": []}, "provides", "dict"),
    ({"options": {"section": "s", "model": "Model"}}, "options.model", "not a qualified name"),
])
def test_malformed_description_is_refused_naming_the_field(override, field, fragment):
    with pytest.raises(contract.ContractError) as err:
        contract.validate(_desc(**override), "seventh = 'x:LAYER'")
    msg = str(err.value)
    assert f"seventh = 'x:LAYER': {field}:" in msg and fragment in msg
    assert "docs/architecture.md" in msg


def _fake_entry_points(monkeypatch, descriptions: dict[str, dict]):
    module = types.ModuleType("fake_layers_for_contract")
    eps = []
    for ep_name, data in descriptions.items():
        setattr(module, ep_name, data)
        eps.append(importlib.metadata.EntryPoint(
            ep_name, f"fake_layers_for_contract:{ep_name}", contract.ENTRY_POINT_GROUP))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(contract, "_entry_points", lambda: eps)
    contract.clear_cache()


@pytest.fixture
def fresh_contract():
    contract.clear_cache()
    yield
    contract.clear_cache()


def test_registration_order_follows_after(monkeypatch, fresh_contract):
    _fake_entry_points(monkeypatch, {"alpha": _desc("alpha", after=("omega",)),
                                     "omega": _desc("omega")})
    assert [d.name for d in contract.installed_layers()] == ["omega", "alpha"]


def test_a_role_provided_twice_is_an_error(monkeypatch, fresh_contract):
    _fake_entry_points(monkeypatch, {
        "alpha": _desc("alpha", provides={"device_communicator": "a.b.C", "register": "a.reg"}),
        "omega": _desc("omega", provides={"device_communicator": "o.b.C", "register": "o.reg"}),
    })
    with pytest.raises(contract.ContractError, match="role 'device_communicator' is provided "
                                                     "by both layer 'alpha' and 'omega'"):
        contract.installed_layers()


def test_entry_point_name_must_match_the_description(monkeypatch, fresh_contract):
    _fake_entry_points(monkeypatch, {"alpha": _desc("omega")})
    with pytest.raises(contract.ContractError, match="names itself 'omega'"):
        contract.installed_layers()


def test_a_needed_role_nobody_provides_names_the_role_and_the_install(monkeypatch, fresh_contract):
    from vllm_ascend_platform.startup import layer_dists

    _fake_entry_points(monkeypatch, {"alpha": _desc("alpha")})
    absent = layer_dists.Layer("models", "vllm-ascend-models")
    monkeypatch.setattr(layer_dists, "absent_layers", lambda: [absent])
    assert contract.provided("device_communicator") is None  # optional lookups just say no
    with pytest.raises(contract.MissingLayerError) as err:
        contract.provided("device_communicator", "the device communicator")
    msg = str(err.value)
    assert "'device_communicator'" in msg and "the device communicator" in msg
    assert "vllm-ascend-models (pip install './[models]')" in msg and "pip install './[all]'" in msg


def test_resolve_names_what_is_missing():
    assert contract.resolve("vllm_ascend_platform.startup.contract.resolve") is contract.resolve
    assert contract.resolve("vllm_ascend_platform.startup.contract") is contract
    with pytest.raises(contract.ContractError, match="has no attribute 'nope'"):
        contract.resolve("vllm_ascend_platform.startup.contract.nope")
    with pytest.raises(contract.ContractError, match="cannot be imported"):
        contract.resolve("no_such_package_xyz.thing")


# ------------------------------------------------------------------ the platform's source
_LAYER_PATH = re.compile(r"^(" + "|".join(LAYER_MODULES) + r")(\.\w+)*(:\w+)?$")


def _layer_references(source: str) -> list[tuple[int, str]]:
    """(line, what) for each import of a layer module and each string that is a layer path."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name.split(".")[0] in LAYER_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in LAYER_MODULES:
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _LAYER_PATH.match(node.value.strip()):
                found.append((node.lineno, repr(node.value)))
    return found


def test_scanner_catches_direct_imports_and_retyped_paths():
    bad = ("import vllm_ascend_comm.stateless\n"
           "from vllm_ascend_graph import WRAPPER_CLS\n"
           "X = 'vllm_ascend_models.lora.punica.PunicaWrapperNPU'\n"
           "importlib.import_module('vllm_ascend_attention')\n"
           "'''a docstring may mention vllm_ascend_graph.wrapper in prose'''\n")
    assert [line for line, _ in _layer_references(bad)] == [1, 2, 3, 4]


def test_platform_source_names_no_layer_module():
    offenders = []
    for path in sorted(PLATFORM_SRC.rglob("*.py")):
        offenders += [f"{path.name}:{line}: {what}"
                      for line, what in _layer_references(path.read_text())]
    assert offenders == [], (
        "the platform reads other layers only through their descriptions "
        "(vllm_ascend_platform.startup.contract); found: " + "; ".join(offenders))


def test_no_layer_reaches_up_into_the_platform():
    # config flows one way: a layer gets its typed section handed down, it never imports (or
    # names, e.g. for importlib) the platform
    offenders = []
    for folder in ("ascend-attention", "ascend-comm", "ascend-graph", "ascend-models"):
        for path in sorted((ROOT / "packages" / folder / "src").rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    names = [node.value] if re.match(r"^vllm_ascend_platform[.:\w]*$",
                                                     node.value) else []
                offenders += [f"{path.name}:{node.lineno}: {n}" for n in names
                              if n.split(".")[0] == "vllm_ascend_platform"]
    assert offenders == [], offenders
