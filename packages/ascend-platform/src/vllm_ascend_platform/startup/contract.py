# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The layer contract: what each vLLM-facing layer publishes, and the one place it is read.

Every layer above ``ascend_ops`` (attention, comm, graph, models, and any later one) publishes
one declarative description, a plain ``dict`` named ``LAYER`` in its top-level package, and
announces it through the entry-point group ``vllm_ascend.layers`` in its ``pyproject.toml``::

    [project.entry-points."vllm_ascend.layers"]
    comm = "vllm_ascend_comm:LAYER"

The description is plain data so that a layer needs nothing from the platform to write it (the
platform sits beside the layers, never below them, and ``ascend_ops`` stays generic and
vLLM-free); this module is its only reader and validates it with pydantic
(:class:`LayerDescription`). The platform learns everything about a layer from here: it never
imports a layer module by name in its own source and never repeats a path a layer publishes
(docs/architecture.md, "The layer contract").

Nothing here imports vLLM at module level (``vllm-ascend doctor`` reads the contract in
environments without vLLM).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import re
from graphlib import CycleError, TopologicalSorter
from typing import Any, overload

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

#: entry-point group every layer announces its description in
ENTRY_POINT_GROUP = "vllm_ascend.layers"

#: per-layer hooks: every layer may provide them; the platform calls each layer's in order
HOOKS = ("register", "configure")

#: what a layer may provide, by role -> what the platform does with it. A role ending in "."
#: takes a suffix (``attention_backend.ASCEND_ATTN``). Apart from :data:`HOOKS`, one installed
#: layer at most provides each role.
ROLES: dict[str, str] = {
    "register": "() -> None; run once per process by the general plugin (idempotent)",
    "configure": "(vllm_config, options) -> None; run by check_and_update_config with the "
                 "layer's typed options section (None when it declares none)",
    "attention_backend.": "an AttentionBackend class, registered under the suffix's name",
    "attention_selector": "(attn_selector_config, hf_text_config) -> backend class path "
                          "(Platform.get_attn_backend_cls)",
    "mla_prefill_backend": "the class Platform.get_mla_prefill_backend_cls returns",
    "graph_param_update_hook": "run before each FULL graph replay (wired to the graph layer)",
    "graph_param_hook_register": "(hook) -> None; adds a pre-replay hook",
    "graph_param_hook_unregister": "(hook) -> None; removes a pre-replay hook",
    "mrv2_graph_manager": "the ModelCudaGraphManager subclass Model Runner V2 (vLLM 0.34) builds "
                          "for graph modes (worker/mrv2_graphs.py)",
    "mrv2_speculator_graph_manager": "the SpeculatorCudaGraphManager subclass vLLM 0.34's "
                                     "EAGLE/MTP speculators build for draft graphs "
                                     "(worker/mrv2_graphs.py)",
    "device_communicator": "Platform.get_device_communicator_cls",
    "stateless_process_group": "Platform.stateless_init_device_torch_dist_pg",
    "static_graph_wrapper": "Platform.get_static_graph_wrapper_cls",
    "compile_backend": "Platform.get_compile_backend",
    "pass_manager": "Platform.get_pass_manager_cls",
    "ir_kernels": "() -> None; registers IR-op kernels (Platform.import_ir_kernels)",
    "ir_op_priority": "(vllm_config) -> IrOpPriorityConfig (Platform.get_default_ir_op_priority)",
    "punica_wrapper": "Platform.get_punica_wrapper (LoRA)",
    "quantization_methods": "tuple of the --quantization names the layer serves; "
                            "NPUPlatform.verify_quantization refuses every other",
    "msmodelslim_method": "the --quantization name an msModelSlim checkpoint (one holding "
                          "quant_model_description.json) is served with unasked (quant_detect)",
}

#: roles whose published name is a value (data), not a class or function: role -> its type
#: (:func:`provided_value` checks it)
DATA_ROLES: dict[str, type] = {"quantization_methods": tuple, "msmodelslim_method": str}

_QUALNAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ContractError(RuntimeError):
    """A layer's description is missing, malformed or inconsistent; the message names it."""


class OptionsSection(BaseModel):
    """The ``additional_config`` section a layer reads, and the pydantic model that types it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    #: key in ``additional_config`` (and field of ``AscendConfig``)
    section: str
    #: qualified name of the section's pydantic model (strict, extra="forbid")
    model: str

    @field_validator("model")
    @classmethod
    def _qualname(cls, value: str) -> str:
        if not _QUALNAME.match(value):
            raise ValueError(f"{value!r} is not a qualified name (package.module.Name)")
        return value


class LayerDescription(BaseModel):
    """One layer's published description (the ``LAYER`` dict; see the module docstring)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    #: short name, also the meta-package extra that installs it ("attention")
    name: str
    #: distribution name ("vllm-ascend-attention"); the fix commands name it
    distribution: str
    #: the layer's version (PEP 440)
    version: str
    #: the vLLM versions it supports, a PEP 440 specifier (">=0.34,<0.35")
    vllm: str
    #: role -> qualified name of a class, function or module (see ``ROLES``)
    provides: dict[str, str]
    #: the typed options section it reads, if any
    options: OptionsSection | None = None
    #: layers whose register hook must run before this one's (imports between layers)
    after: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r} must be a lower-case identifier")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        try:
            Version(value)
        except InvalidVersion as exc:
            raise ValueError(f"{value!r} is not a PEP 440 version") from exc
        return value

    @field_validator("vllm")
    @classmethod
    def _vllm(cls, value: str) -> str:
        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(
                f"{value!r} is not a PEP 440 specifier such as '>=0.34,<0.35'") from exc
        return value

    @model_validator(mode="after")
    def _provides(self) -> LayerDescription:
        for role, qualname in self.provides.items():
            known = role in ROLES or any(
                role.startswith(r) and len(role) > len(r) for r in ROLES if r.endswith(".")
            )
            if not known:
                raise ValueError(
                    f"provides: unknown role {role!r}; known roles: {', '.join(ROLES)}")
            if not _QUALNAME.match(qualname):
                raise ValueError(f"provides[{role!r}]: {qualname!r} is not a qualified name")
        return self

    @property
    def vllm_range(self) -> SpecifierSet:
        return SpecifierSet(self.vllm)


def resolve(qualname: str) -> Any:
    """Import what ``qualname`` names: a module, or an attribute of a module.

    Raises:
        ContractError: nothing importable has that name (the import error is chained).
    """
    try:
        return importlib.import_module(qualname)
    except ModuleNotFoundError as exc:
        if exc.name is not None and not qualname.startswith(exc.name):
            raise  # a dependency inside an existing module is missing: not ours to rename
    module_name, _, attr = qualname.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ContractError(f"{qualname!r} cannot be imported ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise ContractError(
            f"{qualname!r}: module {module_name} has no attribute {attr!r}") from exc


def validate(data: Any, source: str) -> LayerDescription:
    """Validate one published description.

    Raises:
        ContractError: naming ``source`` (the entry point) and the first invalid field.
    """
    if isinstance(data, LayerDescription):
        return data
    try:
        return LayerDescription.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "description"
        raise ContractError(
            f"layer description {source}: {where}: {err['msg']}; see docs/architecture.md, "
            "\"The layer contract\""
        ) from None


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


@functools.cache
def installed_layers() -> tuple[LayerDescription, ...]:
    """Every installed layer's description, in registration order (``after`` first).

    Raises:
        ContractError: a description fails to load or validate, two layers share a name or a
            role, a layer's ``after`` names itself in a cycle.
    """
    found: dict[str, LayerDescription] = {}
    owner: dict[str, str] = {}
    for ep in _entry_points():
        source = f"{ep.name} = {ep.value!r} (entry point group {ENTRY_POINT_GROUP})"
        try:
            data = ep.load()
        except Exception as exc:  # a broken layer install must name itself
            raise ContractError(f"layer description {source} cannot be loaded: {exc}") from exc
        desc = validate(data, source)
        if desc.name != ep.name:
            raise ContractError(f"layer description {source} names itself {desc.name!r}")
        if desc.name in found:
            raise ContractError(f"two installed layers are named {desc.name!r}")
        for role in desc.provides:
            if role in HOOKS:
                continue
            if role in owner:
                raise ContractError(
                    f"role {role!r} is provided by both layer {owner[role]!r} and {desc.name!r}; "
                    "uninstall one of them"
                )
            owner[role] = desc.name
        found[desc.name] = desc
    graph = {name: [a for a in d.after if a in found] for name, d in found.items()}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise ContractError(f"layer 'after' declarations form a cycle: {exc.args[1]}") from None
    return tuple(found[name] for name in order)


def layer(name: str) -> LayerDescription | None:
    """The installed layer called ``name``, or None."""
    return next((d for d in installed_layers() if d.name == name), None)


def provider(role: str) -> LayerDescription | None:
    """The installed layer that provides ``role``, or None."""
    return next((d for d in installed_layers() if role in d.provides), None)


class MissingLayerError(RuntimeError):
    """A role the platform needs is provided by no installed layer."""


@overload
def provided(role: str, needed_by: None = None) -> str | None: ...
@overload
def provided(role: str, needed_by: str) -> str: ...
def provided(role: str, needed_by: str | None = None) -> str | None:
    """The qualified name published for ``role``.

    Args:
        role: a key of :data:`ROLES`.
        needed_by: when given, a missing provider is an error naming this purpose; when None,
            a missing provider returns None (optional feature).

    Raises:
        MissingLayerError: ``needed_by`` is given and no installed layer provides ``role``.
    """
    desc = provider(role)
    if desc is not None:
        return desc.provides[role]
    if needed_by is None:
        return None
    from vllm_ascend_platform.startup import layer_dists

    absent = layer_dists.absent_layers()
    listing = ", ".join(f"{layer.dist} (pip install './[{layer.key}]')" for layer in absent)
    raise MissingLayerError(
        f"the Ascend platform needs a layer providing {role!r} for {needed_by}, and no installed "
        f"layer does; layers the vllm-ascend meta-package declares but that are not installed: "
        f"{listing or 'none'}; install the one you need from the checkout, or every layer: "
        "pip install './[all]' (see docs/architecture.md, \"Layers\")"
    )


def resolve_role(role: str, needed_by: str) -> Any:
    """Import and return what the layer providing ``role`` publishes (see :func:`provided`)."""
    return resolve(provided(role, needed_by))


def provided_value(role: str, needed_by: str | None = None) -> Any:
    """The value the layer providing the data role ``role`` publishes (see :data:`DATA_ROLES`),
    or None when no installed layer provides it and ``needed_by`` is None.

    Raises:
        MissingLayerError: ``needed_by`` is given and no installed layer provides ``role``.
        ContractError: the published name cannot be imported, or its value is not of the
            role's type (a tuple must hold only ``str``).
    """
    qualname = provided(role, needed_by)
    if qualname is None:
        return None
    value = resolve(qualname)
    kind = DATA_ROLES[role]
    well_typed = isinstance(value, kind)
    if well_typed and isinstance(value, tuple):
        well_typed = all(isinstance(v, str) for v in value)
    if not well_typed:
        expected = "a tuple of str" if kind is tuple else f"a {kind.__name__}"
        raise ContractError(
            f"role {role!r}: {qualname} is {value!r}, not {expected}; see docs/architecture.md, "
            "\"The layer contract\"")
    return value


def roles_with_prefix(prefix: str) -> dict[str, str]:
    """Suffix -> qualified name for every installed role ``prefix + suffix``."""
    return {
        role[len(prefix):]: qualname
        for desc in installed_layers()
        for role, qualname in desc.provides.items()
        if role.startswith(prefix)
    }


def clear_cache() -> None:
    """Forget the descriptions read in this process (tests that install fake layers)."""
    installed_layers.cache_clear()
