# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The parity rule itself (parity.judge) on hand-built logprobs: no model, no vLLM."""

from __future__ import annotations

import math

import torch
from hf_oracle import OracleRun
from parity import judge


def _oracle(tokens: list[int], step_probs: list[list[float]]) -> OracleRun:
    return OracleRun([0], tokens, [torch.tensor(p).log() for p in step_probs])


def _vllm_steps(step_probs: list[dict[int, float]]) -> list[dict[int, tuple[float, int]]]:
    out = []
    for probs in step_probs:
        ranked = sorted(probs.items(), key=lambda kv: -kv[1])
        out.append({t: (math.log(p), r + 1) for r, (t, p) in enumerate(ranked)})
    return out


# vocab of 8; step 0 clear winner 1; step 1 a near tie between 2 and 3 (gap 1e-5 in prob).
HF_PROBS = [[0.0, 0.9, 0.02, 0.02, 0.02, 0.02, 0.01, 0.01],
            [0.0, 0.01, 0.40001, 0.4, 0.09, 0.05, 0.02, 0.02999]]


def test_identical_passes():
    v = judge([1, 2], _vllm_steps([{1: 0.9, 2: 0.02}, {2: 0.5, 3: 0.4}]), _oracle([1, 2], HF_PROBS))
    assert v.identical and v.ok


def test_near_tie_divergence_passes():
    vllm = _vllm_steps([{1: 0.9, 2: 0.02, 3: 0.02, 4: 0.02, 5: 0.02},
                        {3: 0.40002, 2: 0.40001, 4: 0.09, 5: 0.05, 7: 0.03}])
    v = judge([1, 3], vllm, _oracle([1, 2], HF_PROBS))
    assert not v.identical and v.near_tie and v.divergence == 1


def test_clear_divergence_fails():
    # HF prefers 1 with 0.9; vLLM picked 2 (hf prob 0.02): log gap ~3.8, far over 1e-3.
    vllm = _vllm_steps([{2: 0.5, 1: 0.4, 3: 0.05, 4: 0.03, 5: 0.02}, {2: 0.5}])
    v = judge([2, 2], vllm, _oracle([1, 2], HF_PROBS))
    assert not v.ok and v.divergence == 0


def test_other_token_outside_top5_fails():
    # vLLM's token 0 has probability 0 on the HF side: not in HF's top-5.
    vllm = _vllm_steps([{0: 0.5, 1: 0.49999, 2: 0.00001}, {2: 0.5}])
    v = judge([0, 2], vllm, _oracle([1, 2], HF_PROBS))
    assert not v.ok


def test_shorter_continuation_fails():
    v = judge([1], _vllm_steps([{1: 0.9}]), _oracle([1, 2], HF_PROBS))
    assert not v.ok
