# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference kernels of the simulated torch_npu operators (norm, activation, KV cache).

Each kernel takes the operator's arguments by their published names (already bound and
defaulted by ``library``) and computes the documented semantics in float32, returning the
operator's dtypes. Constraints are checked before (``constraints``); a case the kernel does not
model raises ``NotImplementedError``, which the library turns into ``SimulatedNpuError``.
Attention lives in ``kernels_attention``, the MoE operators in ``kernels_moe``, rotary
embedding (ATB ``_npu_rotary_embedding``, ``npu_mrope``) in ``kernels_rope``.
"""

from __future__ import annotations

import torch

from ascend_ops import reference


def npu_rms_norm(self, gamma, epsilon):
    """npu_rms_norm -> (y, rstd): y = x * rstd * gamma, rstd = 1/sqrt(mean(x^2) + eps) (float32)."""
    xf = self.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + epsilon)
    return reference.rms_norm(self, gamma, epsilon), rstd


def npu_add_rms_norm(x1, x2, gamma, epsilon):
    """npu_add_rms_norm -> (y, rstd, x = x1 + x2)."""
    y, x_sum = reference.add_rms_norm(x1, x2, gamma, epsilon)
    rstd = torch.rsqrt(x_sum.float().pow(2).mean(-1, keepdim=True) + epsilon)
    return y, rstd, x_sum


def npu_swiglu(self, dim):
    """npu_swiglu: A * sigmoid(A) * B with (A, B) the halves of ``self`` along ``dim``."""
    moved = self.movedim(dim, -1)
    return reference.swiglu(moved).movedim(-1, dim).contiguous()


def _npu_reshape_and_cache(key, value, key_cache, value_cache, slot_indices):
    """ATB ReshapeAndCache: token t -> cache[slot // block_size, slot % block_size]; slot < 0 skipped."""
    reference.reshape_and_cache(key, value, key_cache, value_cache, slot_indices)


def _npu_reshape_and_cache_siso(key, key_cache, slot_indices):
    """ATB ReshapeAndCache with K_CACHE_V_BYPASS: only ``key`` into ``key_cache``."""
    flat = key_cache.view(-1, *key_cache.shape[2:])
    keep = slot_indices >= 0
    flat[slot_indices[keep].long()] = key[keep]


KERNELS = {
    "npu_rms_norm": npu_rms_norm,
    "npu_add_rms_norm": npu_add_rms_norm,
    "npu_swiglu": npu_swiglu,
    "_npu_reshape_and_cache": _npu_reshape_and_cache,
    "_npu_reshape_and_cache_siso": _npu_reshape_and_cache_siso,
}
