# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""KV budget arithmetic and messages (``memory.py``), checked with hand-computed numbers."""

from __future__ import annotations

import pytest
from vllm_ascend_platform.worker.memory import KVBudget, KVBudgetError, check_kv_budget

GiB = 1 << 30


def _budget(**kw):
    base = dict(device_memory=4 * GiB, utilization=0.5, weights=1 * GiB, activations=GiB // 4,
                kv_bytes_per_token=1000, block_size=16, max_model_len=512)
    base.update(kw)
    return KVBudget(**base)


def test_fitting_budget_returns_kv_bytes():
    b = _budget()
    # 4 GiB * 0.5 - 1 GiB - 0.25 GiB = 0.75 GiB
    assert check_kv_budget(b) == 3 * GiB // 4


def test_weights_alone_exceed_budget():
    # device memory about 1.05x the weights
    b = _budget(device_memory=int(1.05 * GiB), utilization=0.9)
    with pytest.raises(KVBudgetError) as err:
        check_kv_budget(b)
    msg = str(err.value)
    assert "weights 1.000 GiB" in msg
    assert "budget 0.945 GiB" in msg
    assert "shortfall" in msg
    assert "VLLM_ASCEND_EMULATE_DEVICE_MEMORY" in msg and "gpu_memory_utilization" in msg
    assert "no max_model_len fits" in msg


def test_one_sequence_does_not_fit_names_largest_len():
    # 50,000 bytes of KV = 3 whole blocks of 16 tokens x 1000 B = 48 tokens
    kv = 50_000
    b = _budget(device_memory=2 * (GiB + GiB // 4 + kv), utilization=0.5, max_model_len=512)
    with pytest.raises(KVBudgetError, match=r"largest max_model_len that fits is 48\b"):
        check_kv_budget(b)


def test_shortfall_value():
    kv = 50_000
    b = _budget(device_memory=2 * (GiB + GiB // 4 + kv), utilization=0.5, max_model_len=512)
    need = 32 * 16 * 1000  # 512 tokens = 32 blocks
    with pytest.raises(KVBudgetError, match=f"shortfall {(need - kv) / GiB:.3f} GiB"):
        check_kv_budget(b)
