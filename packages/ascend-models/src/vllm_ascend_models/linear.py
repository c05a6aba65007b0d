# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Prepacked dense linears on the host: vLLM's unquantized linear / LM-head methods with the
GEMM routed to ``ascend_ops.linear`` and the weight packed once, right after loading.

vLLM 0.32 packs linear weights only on its own CPU platform (``vllm/model_executor/layers/
utils.py``, ``dispatch_cpu_unquantized_gemm``); on any other platform ``UnquantizedLinearMethod``
calls plain ``torch.nn.functional.linear``. Our linear layer classes (PluggableLayer OOT
replacements of vLLM's ``ReplicatedLinear``, ``ColumnParallelLinear``,
``MergedColumnParallelLinear``, ``QKVParallelLinear``, ``RowParallelLinear`` and
``ParallelLMHead``, registered by :func:`vllm_ascend_models.register`) build exactly as vLLM's,
then give an unquantized layer :class:`PackedLinearMethod` / :class:`PackedLMHeadMethod`. After
the weights load, ``process_weights_after_loading`` asks ``ascend_ops.pack_linear_weight`` for a
handle: on host tensors with the native backend (CPU emulation) that is a packed copy kept
inside ascend_ops (the grouped-matmul column blocks for decode rows, and oneDNN's layout for
larger inputs: float32 prefill, wider bfloat16 / float16 inputs on AVX-512 builds:
``ascend_ops.native.linear``); anywhere
else (NPU, simulated NPU) it is -1 and ``apply`` is vLLM's own.
``layer.weight`` stays the plain [N, K] tensor (LoRA, sleep mode and weight reloads use it;
ascend_ops rebuilds a pack whose weight was rewritten).
"""

from __future__ import annotations

import weakref
from typing import Any

import ascend_ops
import torch
from vllm.model_executor.layers.linear import (
    ColumnParallelLinear,
    MergedColumnParallelLinear,
    QKVParallelLinear,
    ReplicatedLinear,
    RowParallelLinear,
    UnquantizedLinearMethod,
)
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    UnquantizedEmbeddingMethod,
)

NO_PACK = -1


def _pack(layer: torch.nn.Module) -> None:
    """Pack ``layer.weight`` and tie the pack's lifetime to the layer.

    The packed copy lives in ascend_ops' registry under an integer handle; it is released when
    the layer is garbage-collected (an engine torn down in the same process would otherwise keep
    every pack it made) and when the layer is packed again (a weight reload)."""
    previous = getattr(layer, "ascend_linear_handle", NO_PACK)
    if previous != NO_PACK:
        ascend_ops.release_linear_weight(previous)
    weight = getattr(layer, "weight", None)
    ok = isinstance(weight, torch.Tensor) and weight.dim() == 2 and not weight.is_meta
    handle = ascend_ops.pack_linear_weight(weight) if ok else NO_PACK
    layer.ascend_linear_handle = handle
    if handle != NO_PACK:
        weakref.finalize(layer, ascend_ops.release_linear_weight, handle)


def _plain(t: torch.Tensor | None) -> torch.Tensor | None:
    """``t`` as a plain ``torch.Tensor`` aliasing the same storage and version counter.

    vLLM's weight parameters are ``torch.Tensor`` subclasses whose ``__torch_function__`` only
    forwards to torch's (``BasevLLMParameter``, vllm/model_executor/parameter.py); a subclass
    sends ``ascend_ops.linear`` through the dispatcher and that Python hook on every call, a
    plain tensor lets it call the native kernel directly (``eager_direct``). Same result.
    Under torch.compile ``t`` is returned as is: Dynamo cannot trace ``as_subclass`` on such a
    subclass ("Argument of `as_subclass` must be a non-dispatcher-style tensor subclass"), and a
    compiled graph has no per-call Python hook to save."""
    if t is None or type(t) is torch.Tensor or torch.compiler.is_compiling():
        return t
    return t.as_subclass(torch.Tensor)


class PackedLinearMethod(UnquantizedLinearMethod):
    """vLLM's ``UnquantizedLinearMethod``; with a pack (``layer.ascend_linear_handle`` >= 0)
    ``apply`` runs ``ascend_ops.linear`` on it: x [..., K] -> [..., N] in the weight's dtype."""

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        super().process_weights_after_loading(layer)
        _pack(layer)

    def apply(self, layer: torch.nn.Module, x: torch.Tensor,
              bias: torch.Tensor | None = None) -> torch.Tensor:
        handle = getattr(layer, "ascend_linear_handle", NO_PACK)
        if handle == NO_PACK:
            return super().apply(layer, x, bias)
        return ascend_ops.linear(x, _plain(layer.weight), _plain(bias), handle)


class PackedLMHeadMethod(UnquantizedEmbeddingMethod):
    """vLLM's ``UnquantizedEmbeddingMethod`` (the LM head's); with a pack the logits projection
    runs ``ascend_ops.linear``; ``embedding`` (tied input embeddings) is unchanged."""

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        super().process_weights_after_loading(layer)
        _pack(layer)

    def apply(self, layer: torch.nn.Module, x: torch.Tensor,
              bias: torch.Tensor | None = None) -> torch.Tensor:
        handle = getattr(layer, "ascend_linear_handle", NO_PACK)
        if handle == NO_PACK:
            return super().apply(layer, x, bias)
        return ascend_ops.linear(x, _plain(layer.weight), _plain(bias), handle)


def _swap(layer: torch.nn.Module, plain: type, packed: Any) -> None:
    method = getattr(layer, "quant_method", None)
    if type(method) is plain:  # exactly vLLM's: quantized and subclassed methods are left alone
        new = packed.__new__(packed)
        new.__dict__.update(method.__dict__)
        layer.quant_method = new


def _replacement(base: Any, plain: type, packed: Any) -> type:
    """``Ascend<base>``: vLLM's layer class whose exact ``plain`` method becomes ``packed``."""

    def __init__(self, *args, **kwargs) -> None:
        base.__init__(self, *args, **kwargs)
        _swap(self, plain, packed)

    return type(f"Ascend{base.__name__}", (base,), {"__init__": __init__, "__module__": __name__})


def _gate_linear() -> tuple[type, ...]:
    """vLLM's MoE router ``GateLinear`` (``vllm/model_executor/layers/fused_moe/router/
    gate_linear.py``, PluggableLayer ``gate_linear``): a ``ReplicatedLinear`` subclass defined in
    vLLM's source, so the ``ReplicatedLinear`` slot does not reach it. Off CUDA/ROCm its forward
    ends in ``ReplicatedLinear.forward`` (``quant_method.apply``), so the same packed method
    serves it; vLLM's CPU platform packs it too (``dispatch_cpu_unquantized_gemm``). Empty when
    the class is not in this vLLM (it is an optimisation only)."""
    try:
        from vllm.model_executor.layers.fused_moe.router.gate_linear import GateLinear
    except ImportError:
        return ()
    return (GateLinear,)


#: (vLLM class, our OOT replacement) for the dense linear layers
LINEAR_REPLACEMENTS: tuple[tuple[type, type], ...] = tuple(
    (base, _replacement(base, UnquantizedLinearMethod, PackedLinearMethod))
    for base in (ReplicatedLinear, ColumnParallelLinear, MergedColumnParallelLinear,
                 QKVParallelLinear, RowParallelLinear, *_gate_linear())
) + ((ParallelLMHead, _replacement(ParallelLMHead, UnquantizedEmbeddingMethod, PackedLMHeadMethod)),)
