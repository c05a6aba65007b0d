# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Capture-size planning (``vllm_ascend_graph.capture_sizes``). Expected lists are written out by
hand from the rules."""

import pytest
from vllm_ascend_graph.capture_sizes import graphs_per_size, plan_capture_sizes

LIMITS = dict(max_num_seqs=16, decode_query_len=1, max_num_batched_tokens=2048)


def plan(sizes, budget=1800, per_size=1, **kw):
    return plan_capture_sizes(sizes, **{**LIMITS, **kw}, graphs_per_size=per_size, budget=budget)


def test_small_list_kept_as_is():
    p = plan([1, 2, 4, 8])
    assert p.sizes == [1, 2, 4, 8] and p.over_limit == [] and p.pruned == []


def test_unsorted_duplicates_sorted_and_unique():
    p = plan([8, 1, 4, 4, 2, 16, 1, 8, 12, 2, 3])
    assert p.sizes == [1, 2, 3, 4, 8, 12, 16]


def test_sizes_above_max_num_seqs_dropped():
    p = plan([1, 2, 4, 8, 16, 32, 64])
    assert p.sizes == [1, 2, 4, 8, 16]
    assert p.over_limit == [32, 64]


def test_decode_query_len_scales_the_cap():
    # 16 requests x 3 tokens (2 speculative tokens) = 48 tokens per uniform decode step
    p = plan([16, 32, 48, 64], decode_query_len=3)
    assert p.sizes == [16, 32, 48] and p.over_limit == [64]


def test_max_num_batched_tokens_caps_too():
    p = plan([1, 8, 16], max_num_batched_tokens=8)
    assert p.sizes == [1, 8]


def test_budget_prunes_keeping_smallest_and_largest():
    # 31 graphs per size (30 layers + 1 pieces), budget 100 -> 3 sizes
    p = plan([1, 2, 4, 8, 12, 16], budget=100, per_size=31)
    assert p.sizes == [1, 8, 16]
    assert p.pruned == [2, 4, 12]
    assert p.num_graphs == 93


def test_budget_for_one_size_keeps_the_largest():
    p = plan([1, 2, 4], budget=40, per_size=31)
    assert p.sizes == [4]


def test_budget_below_one_size_rejected():
    with pytest.raises(ValueError, match="graph budget 10 is below the 31 graphs"):
        plan([1, 2], budget=10, per_size=31)


def test_empty_list_rejected():
    with pytest.raises(ValueError, match="empty"):
        plan([])


def test_all_over_limit_rejected():
    with pytest.raises(ValueError, match="exceeds the largest batch"):
        plan([32, 64])


@pytest.mark.parametrize("bad", [0, -4])
def test_non_positive_rejected(bad):
    with pytest.raises(ValueError, match=">= 1"):
        plan([1, bad])


@pytest.mark.parametrize("bad", [2.0, "4", True])
def test_non_int_rejected(bad):
    with pytest.raises(TypeError, match="ints"):
        plan([1, bad])


def test_graphs_per_size():
    assert graphs_per_size(piecewise=True, full=False, num_layers=30) == 31
    assert graphs_per_size(piecewise=False, full=True, num_layers=30) == 1
    assert graphs_per_size(piecewise=True, full=True, num_layers=30) == 32
    with pytest.raises(ValueError):
        graphs_per_size(piecewise=False, full=False, num_layers=30)
