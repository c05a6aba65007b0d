# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``SiluAndMul`` routed to ``ascend_ops.swiglu`` (torch_npu ``npu_swiglu``)."""

from __future__ import annotations

import ascend_ops
import torch
from vllm.model_executor.layers.activation import SiluAndMul


class AscendSiluAndMul(SiluAndMul):
    """vLLM ``SiluAndMul`` whose out-of-tree forward calls ``ascend_ops.swiglu``.

    Registered with ``CustomOp.register_oot`` under the upstream class name ``"SiluAndMul"``, so
    every ``SiluAndMul(...)`` built while registered is an instance of this class. vLLM picks
    ``forward_oot`` when the op is enabled in ``compilation_config.custom_ops`` (registered name
    ``silu_and_mul``) and the current platform is out of tree; otherwise it runs the inherited
    ``forward_native``.
    """

    def forward_oot(self, x: torch.Tensor) -> torch.Tensor:
        """silu(x[..., :d]) * x[..., d:] for ``x`` [..., 2d] -> [..., d] in ``x.dtype``.

        Semantics: vLLM ``SiluAndMul.forward_native``; raises ValueError (from ascend_ops) when
        the last dim is odd, TypeError for a non-float ``x``.
        """
        return ascend_ops.swiglu(x)
