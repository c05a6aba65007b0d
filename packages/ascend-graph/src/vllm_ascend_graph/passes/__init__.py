# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""FX fusion passes of the Ascend compile backend.

Each pass is ``callable(fx.Graph) -> int`` (number of rewrites) with a ``name`` equal
to its ``ascend_compilation_config`` switch. Fusions without a pass (q/k-norm + rope,
rope + KV-cache write) are refused by name when asked for (``options.UNBUILT_FUSIONS``).
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
