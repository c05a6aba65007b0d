# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The native code's per-element bf16/fp16 <-> float32 conversions agree bit for bit with torch's
(every 16-bit pattern in, round-to-nearest-even out), observed through add_rms_norm's residual."""

from __future__ import annotations

import ascend_ops
import pytest
import torch


@pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_every_16_bit_pattern_converts_like_torch(dtype):
    pattern = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    x = pattern.reshape(-1, 256)
    g = torch.Generator().manual_seed(0)
    # second operand: a float32 value rounded by torch; x + r exercises widening and rounding
    r = (torch.randn(x.shape, generator=g) * 3).to(dtype)
    for other in (torch.zeros_like(x), r):
        with ascend_ops.use_backend("native"):
            _, got = ascend_ops.add_rms_norm(x, other, torch.ones(256, dtype=dtype), 1e-6)
        expect = (x.float() + other.float()).to(dtype)
        same = (got.view(torch.int16) == expect.view(torch.int16)) | (got.isnan() & expect.isnan())
        assert bool(same.all()), f"{int((~same).sum())} patterns differ from torch's rounding"
