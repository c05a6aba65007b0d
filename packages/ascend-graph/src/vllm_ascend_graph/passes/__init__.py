# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""FX fusion passes of the Ascend compile backend.

Each pass is ``callable(fx.Graph) -> int`` (number of rewrites) with a ``name`` equal
to its ``ascend_compilation_config`` switch. ``fuse_qk_norm_rope`` and
``fuse_rope_kv_cache`` are accepted switches without a pass yet: in vLLM 0.32 the
KV-cache write happens inside the attention splitting op (outside every compiled
piece), and ascend_ops has no fused q/k-norm + rope op to rewrite to.
"""

from __future__ import annotations

from typing import Any


def build_passes(options: Any) -> list[Any]:
    """The passes switched on in ``options`` (a ``GraphOptions``), in run order."""
    import ascend_ops  # noqa: F401  (registers torch.ops.ascend.*)

    from vllm_ascend_graph.passes.add_rms_norm import FuseAddRMSNormPass
    from vllm_ascend_graph.passes.swiglu import FuseSwiGLUPass

    passes: list[Any] = []
    if options.fuse_swiglu:
        passes.append(FuseSwiGLUPass())
    if options.fuse_add_rms_norm:
        passes.append(FuseAddRMSNormPass())
    return passes
