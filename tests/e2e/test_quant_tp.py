# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""An msModelSlim W8A8 (static) checkpoint under tensor parallelism: TP=2 gives TP=1's tokens.

The checkpoint is msModelSlim's own output for the tiny random Qwen3 of tiny_qwen3.py (4 query /
2 KV heads, so TP=2 splits both; q/k/v/o/gate/up int8, down_proj float as in the SmolLM2
recipe; quant_checkpoints.py, cached). Static W8A8 is the scheme with a per-rank subtlety: the
row-parallel o_proj's int32 ``quant_bias`` must be added once, not once per rank, before the
all-reduce (linear.py). Engines run in this process as test_parallel.py's do (2 GiB of emulated
device memory per rank), one after the other, served without naming ``quantization``.
"""

from __future__ import annotations

import os

import pytest
from _parallel_engines import PROMPTS, _generate
from quant_checkpoints import quantized


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> str:
    from tiny_qwen3 import save_tiny_qwen3

    src = save_tiny_qwen3(tmp_path_factory.mktemp("tiny_qwen3"), seed=0)
    return quantized("w8a8", source=src, name="tiny-qwen3-s0")


@pytest.fixture(scope="module")
def runs(ckpt):
    import ascend_ops

    saved = os.environ.get("VLLM_ASCEND_EMULATE_DEVICE_MEMORY")
    os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = "2GiB"
    try:
        ascend_ops.reset_call_counts()
        tp1 = _generate(ckpt, PROMPTS)
        counts = ascend_ops.call_counts()
        tp2 = _generate(ckpt, PROMPTS, tensor_parallel_size=2)
    finally:
        if saved is None:
            os.environ.pop("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", None)
        else:
            os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = saved
    return tp1, tp2, counts


def test_tp1_ran_the_static_int8_ops(runs):
    _, _, counts = runs
    # per forward: 2 layers x 3 int8 matmuls (qkv, o, gate_up); down_proj stays float
    assert counts.get("quantize", 0) >= 6 and counts["quantize"] % 6 == 0
    assert counts.get("quant_matmul") == counts["quantize"]


def test_tp2_gives_tp1_tokens(runs):
    tp1, tp2, _ = runs
    assert all(len(t) == len(tp1[0]) for t in tp1)
    assert tp2 == tp1
