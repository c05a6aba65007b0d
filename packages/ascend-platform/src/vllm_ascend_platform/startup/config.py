# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``AscendConfig``: the plugin's options, parsed from vLLM's ``additional_config``.

Users pass them as JSON: ``--additional-config '{"ascend_compilation_config":
{"fuse_swiglu": false}}'`` (or ``LLM(additional_config={...})``). Parsing is strict
(upstream vLLM options write their own keys into it):

* an unknown key raises :class:`AscendConfigError` naming the key and the closest
  valid one (``difflib``);
* a value of the wrong type raises naming the key and the expected type; no
  coercion, so ``"true"`` is not a bool and ``"8"`` is not an int;
* keys vLLM 0.34 itself writes into ``additional_config``
  (``EngineArgs.create_engine_config``: ``gdn_prefill_backend``,
  ``kda_prefill_backend``, ``kda_decode_backend``) pass; values the Ascend
  platform has no kernel for log a warning and are removed, so vLLM falls back
  to its default selection.

``init_ascend_config`` runs once per process that builds the config (from
``NPUPlatform.check_and_update_config`` through ``startup_check``); processes that
receive a finished ``VllmConfig`` (workers) call it again with that config.
"""

from __future__ import annotations

import difflib
import functools
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

logger = logging.getLogger("vllm.ascend")


class AscendConfigError(ValueError):
    """``additional_config`` holds a key or value the Ascend plugin does not accept."""


class AscendConfig(BaseModel):
    """All Ascend options (``vllm_config.additional_config``): the platform's own keys here, plus
    one section per installed layer that declares one, typed by that layer's model
    (:func:`ascend_config_model`; docs/architecture.md, "The layer contract")."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    #: cast linear weights to the FRACTAL_NZ layout at load time (refused until built)
    enable_weight_nz: bool = False


@functools.cache
def ascend_config_model() -> type[AscendConfig]:
    """:class:`AscendConfig` with a field for each installed layer's options section.

    The field's type is the pydantic model the layer publishes (``options.model`` in its
    description) and its default that model's defaults, so each section is defined once, by
    the layer that reads it.

    Raises:
        ContractError: a section's model cannot be imported, is not a pydantic model, or
            reuses a key of the platform or of another layer.
    """
    from vllm_ascend_platform.startup import contract

    fields: dict[str, Any] = {}
    for desc in contract.installed_layers():
        if desc.options is None:
            continue
        section, model = desc.options.section, contract.resolve(desc.options.model)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise contract.ContractError(
                f"layer {desc.name}: options.model {desc.options.model!r} is not a pydantic model")
        if section in AscendConfig.model_fields or section in fields:
            raise contract.ContractError(
                f"layer {desc.name}: options section {section!r} is already taken")
        fields[section] = (model, model())
    if not fields:
        return AscendConfig
    return create_model("AscendConfig", __base__=AscendConfig, **fields)


def layer_sections(ascend_config: AscendConfig) -> dict[str, Any]:
    """Layer name -> its typed options section in ``ascend_config`` (None when it declares none)."""
    from vllm_ascend_platform.startup import contract

    return {
        d.name: getattr(ascend_config, d.options.section) if d.options else None
        for d in contract.installed_layers()
    }


#: Keys vLLM 0.34 writes into additional_config itself -> values that work on Ascend.
UPSTREAM_KEYS: dict[str, frozenset[str]] = {
    "gdn_prefill_backend": frozenset(),
    "kda_prefill_backend": frozenset({"auto"}),
    "kda_decode_backend": frozenset({"auto", "native"}),
}

_EXPECTED = {
    bool: "a JSON boolean (true/false)",
    int: "a JSON integer",
}


def _expected_type(model: type[BaseModel], key: str) -> str:
    field = model.model_fields[key]
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a JSON object with keys " + ", ".join(sorted(annotation.model_fields))
    if annotation in _EXPECTED:
        return _EXPECTED[annotation]
    if annotation == (int | None):
        return "a JSON integer or null"
    return str(annotation)


def _check_keys(data: dict, model: type[BaseModel], path: str) -> None:
    """Raise for the first unknown key, naming the closest valid one; recurse into objects."""
    valid = sorted(model.model_fields)
    for key, value in data.items():
        where = f"{path}{key!r}" if path else repr(key)
        refused = getattr(model, "REFUSED_KEYS", {})  # a section's keys it refuses by name
        if key in refused:
            raise AscendConfigError(
                f"additional_config: key {where} is not built on Ascend yet, remove it from "
                f"{path.rstrip('.') or 'additional_config'}: {key}: {refused[key]}."
            )
        if key not in model.model_fields:
            close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise AscendConfigError(
                f"additional_config: unknown key {where}; {hint}valid keys"
                f"{' under ' + path.rstrip('.') if path else ''}: {', '.join(valid)}."
            )
        annotation = model.model_fields[key].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if not isinstance(value, dict):
                raise AscendConfigError(
                    f"additional_config: key {where} expects {_expected_type(model, key)}, "
                    f"got {type(value).__name__} {value!r}."
                )
            _check_keys(value, annotation, f"{path}{key}.")


def _type_error(exc: ValidationError, data: dict) -> AscendConfigError:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    if err["type"] == "value_error":  # a model's own validator: its message names the rule
        msg = str(err["msg"]).removeprefix("Value error, ")
        return AscendConfigError(f"additional_config: key {'.'.join(loc)!r} {msg}.")
    model: type[BaseModel] = ascend_config_model()
    for part in loc[:-1]:
        model = model.model_fields[part].annotation  # type: ignore[assignment]
    value: Any = data
    for part in loc:
        value = value[part]
    key = ".".join(loc)
    return AscendConfigError(
        f"additional_config: key {key!r} expects {_expected_type(model, loc[-1])}, "
        f"got {type(value).__name__} {value!r}."
    )


def parse_additional_config(additional: Any) -> AscendConfig:
    """Parse ``additional_config`` into an :class:`AscendConfig` (``additional`` is not changed).

    Args:
        additional: ``vllm_config.additional_config`` (a dict; vLLM's default is ``{}``).
            The upstream keys vLLM writes itself (``UPSTREAM_KEYS``) are not ours and are
            skipped; :func:`without_unservable_upstream_keys` handles their values.

    Raises:
        AscendConfigError: unknown key, wrong type, or a non-dict ``additional_config``.
    """
    if additional is None:
        additional = {}
    if not isinstance(additional, dict):
        raise AscendConfigError(
            f"additional_config must be a JSON object (dict), got {type(additional).__name__}."
        )
    ours = {key: value for key, value in additional.items() if key not in UPSTREAM_KEYS}
    model = ascend_config_model()
    _check_keys(ours, model, "")
    try:
        return model.model_validate(ours)
    except ValidationError as exc:
        raise _type_error(exc, ours) from None


def without_unservable_upstream_keys(additional: dict) -> dict:
    """A copy of ``additional`` without the upstream keys whose value Ascend cannot serve
    (vLLM then uses its default), each dropped with a warning; ``additional`` is not changed."""
    kept = {}
    for key, value in additional.items():
        if key in UPSTREAM_KEYS and value not in UPSTREAM_KEYS[key]:
            logger.warning(
                "vllm-ascend: additional_config %s=%r (set by vLLM's --%s) has no Ascend "
                "kernel; ignoring it so vLLM uses its default.",
                key, value, key.replace("_", "-"),
            )
            continue
        kept[key] = value
    return kept


_current: AscendConfig | None = None


def init_ascend_config(vllm_config: Any) -> AscendConfig:
    """Parse ``vllm_config.additional_config`` and make it this process's AscendConfig.

    Called from ``NPUPlatform.check_and_update_config`` (vLLM's hook for a platform to adjust
    the config): upstream keys Ascend cannot serve are dropped by giving ``vllm_config`` a new
    ``additional_config`` dict, never by editing the caller's dict in place.
    """
    global _current
    additional = getattr(vllm_config, "additional_config", None)
    _current = parse_additional_config(additional)
    if isinstance(additional, dict):
        kept = without_unservable_upstream_keys(additional)
        if len(kept) != len(additional):
            vllm_config.additional_config = kept
    return _current


def get_ascend_config() -> AscendConfig:
    """This process's AscendConfig.

    When ``init_ascend_config`` has not run in this process (workers receive a finished
    ``VllmConfig``), it is parsed from the config vLLM has made current
    (``set_current_vllm_config``), if any.

    Raises:
        RuntimeError: no AscendConfig has been initialised and no vLLM config is current.
    """
    if _current is None:
        try:
            from vllm.config import get_current_vllm_config_or_none
        except ImportError:
            get_current_vllm_config_or_none = None
        current = get_current_vllm_config_or_none() if get_current_vllm_config_or_none else None
        if current is not None:
            return init_ascend_config(current)
        raise RuntimeError(
            "AscendConfig is not initialised in this process; call "
            "vllm_ascend_platform.startup.config.init_ascend_config(vllm_config) first."
        )
    return _current


def parse_additional_config_arg(text: str) -> dict:
    """Strict ``--additional-config`` value parser: a JSON object or an argparse error.

    vLLM 0.34 only JSON-decodes the value when it looks like ``{...}``
    (``union_dict_and_str`` in vllm/engine/arg_utils.py); an unbalanced ``{"a": 1``
    reaches ``VllmConfig`` as a string and fails with an opaque validation error.

    Raises:
        argparse.ArgumentTypeError: the text is not a JSON object; names the JSON error.
    """
    import argparse
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): {text!r}"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"enable_weight_nz\": false}}', got {text!r}"
        )
    return value


# patch: additional-config-argparse (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def strict_additional_config_argument(parser: Any) -> None:
    """Make ``parser``'s ``--additional-config`` parse strictly (for ``pre_register_and_update``).

    Call from ``NPUPlatform.pre_register_and_update(parser)``; vLLM passes the server's
    argument parser there after adding its own options. No-op when ``parser`` is None or
    has no ``--additional-config`` option.
    """
    for action in getattr(parser, "_actions", []) if parser is not None else []:
        if "--additional-config" in action.option_strings:
            action.type = parse_additional_config_arg
