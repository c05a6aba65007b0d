# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host lengths for FIA, including FULL-graph padding as vLLM 0.32's runner pads a batch
(``_build_attention_metadata``: padded request slots repeat the last query_start_loc value,
have seq_len 0 and null-block rows)."""

from __future__ import annotations

import torch
from vllm_ascend_attention.host_lengths import build


def _t(values):
    return torch.tensor(values, dtype=torch.int32)


def test_unpadded_batch_keeps_vllm_lengths():
    got = build(_t([0, 3, 4, 6]), _t([3, 6, 9]), num_tokens=6, max_kv_per_request=64)
    assert (got.ends, got.kv_lens, got.num_tokens) == ([3, 4, 6], [3, 6, 9], 6)


def test_padding_tokens_become_dummy_requests_in_padded_slots():
    # 3 real decode requests padded to a captured size of 8 tokens / 8 request slots
    qsl = _t([0, 1, 2, 3, 3, 3, 3, 3, 3])
    seq = _t([10, 20, 5, 0, 0, 0, 0, 0])
    got = build(qsl, seq, num_tokens=8, max_kv_per_request=4)
    assert got.num_tokens == 8
    assert got.ends[:3] == [1, 2, 3] and got.kv_lens[:3] == [10, 20, 5]
    # 5 padding tokens: chunks of at most 4 KV positions, query length == KV length
    assert got.ends[3:] == [7, 8, 8, 8, 8]
    assert got.kv_lens[3:] == [4, 1, 0, 0, 0]


def test_padding_without_free_slots_attends_real_rows_only():
    got = build(_t([0, 2, 5]), _t([2, 9]), num_tokens=8, max_kv_per_request=64)
    assert (got.ends, got.kv_lens, got.num_tokens) == ([2, 5], [2, 9], 5)
