# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which compressed-tensors checkpoints are served, decided at start-up.

vLLM's ``compressed-tensors`` config (``quantization/compressed_tensors/compressed_tensors.py``)
maps each ``config_groups`` entry of the checkpoint's ``quantization_config`` to a scheme and
looks the scheme's kernel up on the current platform only while the weights load. On Ascend the
models layer provides the int8 W8A8 GEMM (``ascend_ops.quant_matmul``, docs/option-support.md);
every other scheme (fp8, weight-only int4/int8, 2:4 sparsity, quantized KV cache, transforms)
has no kernel here. This check refuses those before any weight is read, naming the group and
what it asks for.

Served (the compressed-tensors ``QuantizationArgs`` fields): weights ``num_bits`` 8, ``type``
``int``, symmetric, ``strategy`` ``channel`` or ``tensor``, not dynamic; input activations
``num_bits`` 8, ``type`` ``int``, symmetric, ``strategy`` ``token`` (dynamic) or ``tensor``;
no output activations, no ``kv_cache_scheme``, no sparsity, no transforms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vllm.config import VllmConfig

METHOD = "compressed-tensors"
SERVED = ("int8 W8A8: weights int8 symmetric per-channel or per-tensor, activations int8 symmetric "
          "per-token dynamic or per-tensor static")


class UnsupportedCompressedTensorsScheme(ValueError):
    """A compressed-tensors checkpoint asks for a scheme the Ascend plugin has no kernel for."""


def _args(group: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = group.get(key)
    return dict(value) if value else None


def _group_problem(group: dict[str, Any]) -> str | None:
    weights = _args(group, "weights")
    acts = _args(group, "input_activations")
    if weights is None:
        return "no weight quantization"
    if (weights.get("num_bits"), weights.get("type")) != (8, "int"):
        return f"weights {weights.get('num_bits')}-bit {weights.get('type')}"
    if not weights.get("symmetric", True) or weights.get("dynamic"):
        return "asymmetric or dynamic weight quantization"
    if weights.get("strategy") not in ("channel", "tensor"):
        return f"weight strategy {weights.get('strategy')!r}"
    if acts is None:
        return "weight-only int8 (no activation quantization)"
    if (acts.get("num_bits"), acts.get("type")) != (8, "int"):
        return f"activations {acts.get('num_bits')}-bit {acts.get('type')}"
    if not acts.get("symmetric", True):
        return "asymmetric activations (an input zero point)"
    if acts.get("strategy") not in ("token", "tensor"):
        return f"activation strategy {acts.get('strategy')!r}"
    if _args(group, "output_activations") is not None:
        return "output activation quantization"
    return None


def check_quantization_config(qcfg: dict[str, Any]) -> None:
    """Raise unless every part of a compressed-tensors ``quantization_config`` is served.

    Args:
        qcfg: the ``quantization_config`` dict of the checkpoint's ``config.json``.

    Raises:
        UnsupportedCompressedTensorsScheme: naming the config group (or the top-level key) and
            what it asks for, and the scheme that is served.
    """
    problems = []
    for name, group in sorted((qcfg.get("config_groups") or {}).items()):
        problem = _group_problem(dict(group))
        if problem:
            problems.append(f"config group {name!r}: {problem}")
    if not qcfg.get("config_groups"):
        problems.append("no config_groups")
    for key in ("kv_cache_scheme", "transform_config"):
        if qcfg.get(key):
            problems.append(f"{key} is set")
    sparsity = qcfg.get("sparsity_config") or {}
    # llm-compressor writes a "dense" sparsity config for checkpoints without sparsity
    if sparsity.get("targets") or sparsity.get("format") not in (None, "dense"):
        problems.append(f"sparsity_config {sparsity.get('format')!r} on {sparsity.get('targets')}")
    if problems:
        raise UnsupportedCompressedTensorsScheme(
            f"--quantization {METHOD}: this checkpoint's " + "; ".join(problems)
            + f" is not served on Ascend. Served: {SERVED}. Quantize the model to that scheme "
            "(or serve the float checkpoint).")


def check_compressed_tensors(vllm_config: VllmConfig) -> None:
    """Start-up check for ``quantization="compressed-tensors"`` (no-op for other methods)."""
    model_config = vllm_config.model_config
    if model_config is None or model_config.quantization != METHOD:
        return
    qcfg = getattr(model_config.hf_config, "quantization_config", None)
    if qcfg is not None and not isinstance(qcfg, dict):
        qcfg = qcfg.to_dict() if hasattr(qcfg, "to_dict") else vars(qcfg)
    check_quantization_config(qcfg or {})
