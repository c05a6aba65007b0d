# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Out-of-tree CustomOp / PluggableLayer registration: activation, rotary embedding (with
M-RoPE), the multimodal encoder attention and the dense linear layers (prepacked host GEMMs,
``vllm_ascend_models.linear``)."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("vllm.ascend.models")

OOT_OP_NAMES = ("silu_and_mul", "rotary_embedding")
"""vLLM ``custom_ops`` names of the CustomOps we replace. Our subclasses keep the upstream name,
so ``+silu_and_mul`` / ``-rotary_embedding`` directives apply to ours exactly as to vLLM's."""


def oot_replacements() -> list[tuple[Any, Any]]:
    """(upstream vLLM class, our subclass) for every CustomOp / PluggableLayer we register out of
    tree."""
    from vllm.model_executor.layers.activation import SiluAndMul
    from vllm.model_executor.layers.attention.mm_encoder_attention import MMEncoderAttention
    from vllm.model_executor.layers.rotary_embedding.mrope import MRotaryEmbedding

    from vllm_ascend_models.layers.activation import AscendSiluAndMul
    from vllm_ascend_models.layers.encoder_attention import AscendMMEncoderAttention
    from vllm_ascend_models.layers.mrope import AscendMRotaryEmbedding
    from vllm_ascend_models.layers.rotary_embedding import ASCEND_ROPE_CLASSES, upstream_class
    from vllm_ascend_models.linear import LINEAR_REPLACEMENTS

    pairs: list[tuple[Any, Any]] = [(SiluAndMul, AscendSiluAndMul)]
    for class_name, ascend_cls in ASCEND_ROPE_CLASSES.items():
        pairs.append((upstream_class(class_name), ascend_cls))
    # multimodal towers and M-RoPE text models (layers/encoder_attention.py, layers/mrope.py)
    pairs.append((MMEncoderAttention, AscendMMEncoderAttention))
    pairs.append((MRotaryEmbedding, AscendMRotaryEmbedding))
    pairs.extend(LINEAR_REPLACEMENTS)
    return pairs


def register_custom_ops() -> list[str]:
    """Register each Ascend subclass with ``CustomOp.register_oot`` on its upstream class.

    Idempotent: a class already registered as ours is skipped. Returns the upstream class names
    newly registered. Raises RuntimeError when another plugin already holds one of the slots
    (vLLM keeps one OOT class per upstream name; two plugins would silently fight over it).
    """
    from vllm.model_executor.custom_op import op_registry_oot

    registered: list[str] = []
    for upstream, ours in oot_replacements():
        slot = upstream.__name__
        holder = op_registry_oot.get(slot)
        if holder is ours:
            continue
        if holder is not None:
            raise RuntimeError(
                f"vLLM CustomOp {slot!r} is already replaced out of tree by "
                f"{holder.__module__}.{holder.__qualname__}; vllm-ascend-models cannot register "
                f"{ours.__qualname__}. Uninstall the other plugin or disable it with VLLM_PLUGINS"
            )
        # register_oot keys by the class it is called on and sets ours.name to that class name;
        # put the upstream custom_ops name back so "+silu_and_mul"-style directives still apply.
        upstream.register_oot(ours)
        ours.name = upstream.name
        registered.append(slot)
    if registered:
        logger.debug("Registered Ascend CustomOp replacements for %s", ", ".join(registered))
    return registered


def enable_custom_ops(compilation_config) -> list[str]:
    """Make our OOT CustomOps enabled in ``compilation_config.custom_ops``; return what was added.

    Call from ``NPUPlatform.check_and_update_config`` (vLLM has appended the base mode ``all`` or
    ``none`` by then: ``none`` whenever Inductor compiles, which turns every CustomOp, ours
    included, off). Appends ``+silu_and_mul`` / ``+rotary_embedding`` unless present. A user's
    explicit ``-<name>`` is respected and logged as a warning naming what runs instead.
    """
    custom_ops = compilation_config.custom_ops
    added: list[str] = []
    for name in OOT_OP_NAMES:
        if f"-{name}" in custom_ops:
            logger.warning(
                "custom_ops contains '-%s': vLLM's native %s runs instead of the Ascend op",
                name,
                name,
            )
            continue
        if f"+{name}" not in custom_ops:
            custom_ops.append(f"+{name}")
            added.append(f"+{name}")
    return added
