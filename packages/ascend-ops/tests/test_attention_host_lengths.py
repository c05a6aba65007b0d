# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host lengths on the CPU branches of ``fused_infer_attention``: every layer of a step passes the
same ``actual_seq_lengths`` / ``actual_seq_lengths_kv``, so their checks and tensors are made once
per distinct value (``reference.paged.StepLengths``, the memo ``ops.attention`` owns and passes to
the backend) -- results equal the tensor-length
call, new values are checked again, and bad values still raise after good ones were memoized."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops.checks import attention as _checks
from conftest import make_paged_problem, naive_attention


def test_same_lengths_checked_once_new_lengths_checked_again(monkeypatch):
    calls = []
    real = _checks.attention_lengths
    monkeypatch.setattr(_checks, "attention_lengths", lambda *a: (calls.append(a[4:]), real(*a))[1])
    p = make_paged_problem([3, 1, 5], [3, 20, 37], 4, 2, 16, 16, torch.float32, seed=4)
    want = naive_attention(p, 0.25, True).float()
    args = (p["query"], p["key_cache"], p["value_cache"], p["block_table"], p["query_start_loc"],
            p["seq_lens"], 0.25, True)
    ends, kv_lens = [3, 4, 9], [3, 20, 37]
    for _ in range(3):  # three "layers" of one step
        out = torch.empty_like(p["query"])
        ascend_ops.fused_infer_attention(*args, actual_seq_lengths=list(ends),
                                         actual_seq_lengths_kv=list(kv_lens), out=out,
                                         softmax_lse=p["query"].new_empty(1))
        torch.testing.assert_close(out, want, atol=2e-5, rtol=2e-5)
    assert calls == [(ends, kv_lens)]
    shorter = [3, 19, 37]  # the next step: new values, checked and used
    out = torch.empty_like(p["query"])
    ascend_ops.fused_infer_attention(*args, actual_seq_lengths=ends, actual_seq_lengths_kv=shorter,
                                     out=out, softmax_lse=p["query"].new_empty(1))
    assert calls[-1] == (ends, shorter)
    assert not torch.allclose(out[3], want[3]), "request 1 attends over 19 positions, not 20"
    with pytest.raises(ValueError, match="must be >= its query length"):
        ascend_ops.fused_infer_attention(*args, actual_seq_lengths=ends,
                                         actual_seq_lengths_kv=[3, 0, 37], out=out,
                                         softmax_lse=p["query"].new_empty(1))


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_the_memo_belongs_to_the_caller_not_the_backend(monkeypatch, backend):
    """The CPU backends keep no state: the memo is the ``step`` object their caller passes."""
    from ascend_ops.families import FAMILIES
    from ascend_ops.reference.paged import StepLengths

    if backend == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    calls = []
    real = _checks.attention_lengths
    monkeypatch.setattr(_checks, "attention_lengths", lambda *a: (calls.append(a[4:]), real(*a))[1])
    p = make_paged_problem([2, 3], [5, 9], 4, 2, 16, 16, torch.float32, seed=7)
    want = naive_attention(p, 0.25, True).float()
    impl = FAMILIES["attention"].backends[backend]
    args = (p["query"], p["key_cache"], p["value_cache"], p["block_table"], p["query_start_loc"],
            p["seq_lens"], 0.25, True, [2, 5], [5, 9], 1.0, 1.0)
    step = StepLengths()
    for _ in range(2):
        torch.testing.assert_close(impl.fused_infer_attention(*args, step=step), want,
                                   atol=2e-5, rtol=2e-5)
    assert len(calls) == 1
    impl.fused_infer_attention(*args, step=StepLengths())  # another owner: its own memo
    assert len(calls) == 2
    impl.fused_infer_attention(*args)  # no owner: checked on every call
    impl.fused_infer_attention(*args)
    assert len(calls) == 4
