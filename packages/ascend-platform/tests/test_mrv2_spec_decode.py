# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host stand-ins for vLLM 0.34's speculative-decoding kernels (``host/mrv2_spec_decode.py``)
on hand-made batches, against the kernels' bodies (vllm/v1/worker/gpu/spec_decode/
target_dependent_ar/speculator.py, rejection_sampler_utils.py): the EAGLE/MTP draft inputs, and
verification through ``ascend_ops`` (greedy rule; sampled rule keeps the target distribution)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm_ascend_platform.host import mrv2_spec_decode as sd


def test_draft_prefill_inputs_shift_tokens_and_drop_rejected():
    # two requests: 3 query tokens (1 rejected draft) and 2 (a chunked prefill, samples nothing)
    batch = SimpleNamespace(
        num_reqs=2, query_start_loc=torch.tensor([0, 3, 5], dtype=torch.int32),
        seq_lens=torch.tensor([10, 7], dtype=torch.int32),
        idx_mapping=torch.tensor([1, 0], dtype=torch.int32),
        input_ids=torch.tensor([11, 12, 13, 21, 22], dtype=torch.int32),
        positions=torch.tensor([7, 8, 9, 5, 6]))
    bufs = SimpleNamespace(input_ids=torch.full((8,), -5, dtype=torch.int32),
                           positions=torch.full((8,), -5), query_start_loc=torch.full((5,), -5,
                           dtype=torch.int32), seq_lens=torch.full((4,), -5, dtype=torch.int32))
    last = torch.full((4,), -5)
    step = torch.tensor(3)
    last_sampled = torch.tensor([0, 99])          # by request state
    next_prefill = torch.tensor([[23, 0, 0, 0]])  # [lookahead, max_num_reqs]
    sd.prepare_draft_prefill_inputs(last, step, bufs, batch, torch.tensor([1, 0]),
                                    torch.tensor([1, 0]), last_sampled, next_prefill, 4)
    # request 0: query 11 12 (13 rejected) -> draft inputs 12, 99 ; request 1: 22, 23
    assert bufs.input_ids[:2].tolist() == [12, 99]
    assert bufs.input_ids[3:5].tolist() == [22, 23]
    assert last.tolist() == [1, 4, 0, 0]
    assert bufs.positions[:2].tolist() == [7, 8] and bufs.positions[3:5].tolist() == [5, 6]
    assert bufs.query_start_loc.tolist() == [0, 3, 5, 5, 5]
    assert bufs.seq_lens.tolist() == [10, 7, 0, 0] and int(step) == 0


def test_decode_inputs_and_draft_updates_advance_positions():
    drafts = torch.tensor([[5, 0], [6, 0], [7, 0]])
    ids = torch.zeros(4, dtype=torch.int32)
    pos = torch.tensor([9, 30, 4, 0])
    src = torch.tensor([10, 31, 5, 0])
    qsl = torch.full((5,), -1, dtype=torch.int32)
    seq = torch.full((4,), -1, dtype=torch.int32)
    launch = sd.KERNELS[f"{sd.G}.target_dependent_ar.speculator._prepare_decode_inputs_kernel"]
    launch[(3,)](drafts[:2, 0], drafts.stride(0), torch.tensor([12, 32], dtype=torch.int32),
                 torch.tensor([2, 0]), ids, pos, src, qsl, seq, 32, 4, BLOCK_SIZE=1024,
                 ADVANCE_DRAFT_POSITIONS=True)
    assert ids[:2].tolist() == [5, 6] and src[:2].tolist() == [11, 32]
    assert pos[:2].tolist() == [10, 31]           # clamped to max_model_len - 1
    assert seq.tolist() == [11, 32, 0, 0]         # 12 - 2 + 1; 32 + 1 clamped
    assert qsl.tolist() == [0, 1, 2, 2, 2]
    out = torch.zeros(3, 3, dtype=torch.int64)
    hidden_in = torch.zeros(3, 2)
    bufs = SimpleNamespace(input_ids=ids, positions=pos, seq_lens=seq)
    sd.update_draft_inputs(torch.tensor([40, 41]), torch.tensor(1), torch.ones(2, 2), out,
                           hidden_in, bufs, src, 2, torch.tensor(32), 3)
    assert out[:2, 1].tolist() == [40, 41] and ids[:2].tolist() == [40, 41]
    assert hidden_in[:2].sum() == 4 and pos[:2].tolist() == [11, 31]
    sd.update_draft_inputs(torch.tensor([50, 51]), torch.tensor(2), torch.ones(2, 2), out,
                           hidden_in, bufs, src, 2, torch.tensor(32), 3)
    assert out[:2, 2].tolist() == [50, 51] and ids[:2].tolist() == [40, 41]  # last step: no feed


def _verify(logits, drafts, cu, temps, seed, pos):
    n = cu.shape[0] - 1
    return sd.rejection_sample(logits, None, drafts, cu, pos, torch.arange(n), None, None,
                               temps, seed, 2)


def test_greedy_rows_accept_matching_prefix():
    logits = torch.full((3, 8), -1.0)
    logits[0, 4] = logits[1, 5] = logits[2, 6] = 1.0
    cu = torch.tensor([0, 3], dtype=torch.int32)
    sampled, n = _verify(logits, torch.tensor([9, 4, 5]), cu, torch.tensor([0.0]),
                         torch.tensor([1]), torch.arange(3))
    assert n.tolist() == [3] and sampled[0].tolist() == [4, 5, 6]
    sampled, n = _verify(logits, torch.tensor([9, -1, 5]), cu, torch.tensor([0.0]),
                         torch.tensor([1]), torch.arange(3))
    assert n.tolist() == [1] and sampled[0, 0].tolist() == 4  # placeholder draft: rejected


def test_sampled_rows_keep_the_target_distribution():
    """One draft (always token 0) over 4000 seeds: the first emitted token is distributed as
    the target ``p`` (Leviathan et al.), whatever the draft; acceptance rate ~ p(0)."""
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = torch.log(p).repeat(2, 1)            # verification row + bonus row
    draws, accepted = torch.zeros(4), 0
    seeds = 4000
    for s in range(seeds):
        sampled, n = _verify(logits, torch.tensor([1, 0]), torch.tensor([0, 2]),
                             torch.tensor([1.0]), torch.tensor([s * 7919 + 3]),
                             torch.tensor([40, 41]))
        draws[int(sampled[0, 0])] += 1
        accepted += int(n[0]) == 2
    freq = draws / seeds
    assert torch.allclose(freq, p, atol=0.03), freq
    assert abs(accepted / seeds - 0.5) < 0.04


@pytest.mark.parametrize("use_fp64", [False, True])
def test_seeded_verification_repeats(use_fp64):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 50, generator=g)
    cu = torch.tensor([0, 3, 5], dtype=torch.int32)
    drafts = torch.tensor([0, 7, 8, 0, 9])
    args = (logits, None, drafts, cu, torch.arange(5), torch.arange(2), None, None,
            torch.tensor([0.8, 1.3]), torch.tensor([5, 6]), 2)
    a = sd.rejection_sample(*args, use_fp64=use_fp64)
    b = sd.rejection_sample(*args, use_fp64=use_fp64)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()


def test_draft_logits_cache_makes_q_the_draft_distribution():
    """With cached draft logits equal to the target's, every draft is accepted (p / q = 1)."""
    logits = torch.randn(3, 16, generator=torch.Generator().manual_seed(1))
    cache = SimpleNamespace(values=torch.zeros(2, 2, 16), row_mapping=None)
    cache.values[1, 0] = logits[0] * 2.0          # pre-temperature (T = 2)
    cache.values[1, 1] = logits[1] * 2.0
    sampled, n = sd.rejection_sample(logits, cache, torch.tensor([0, 3, 4]),
                                     torch.tensor([0, 3]), torch.arange(3), torch.tensor([1]),
                                     None, None, torch.tensor([0.0, 2.0]), torch.tensor([0, 9]),
                                     2)
    assert n.tolist() == [3] and sampled[0, :2].tolist() == [3, 4]


def test_flatten_sampled_puts_verified_tokens_on_their_logits_rows():
    flat = torch.zeros(7, dtype=torch.int64)
    sampled = torch.tensor([[4, 5, 6], [7, 8, 9]])
    launch = sd.KERNELS[f"{sd.G}.rejection_sampler._flatten_sampled_kernel"]
    launch[(2,)](flat, sampled, sampled.stride(0), torch.tensor([2, 3], dtype=torch.int32),
                 torch.tensor([0, 3, 7], dtype=torch.int32), num_warps=1)
    assert flat.tolist() == [4, 5, 0, 7, 8, 9, 0]


@pytest.mark.parametrize("method", [dict(synthetic_conditional_rates=torch.tensor([0.5])),
                                    dict(use_block_verification=True), dict(fly_window_size=4)])
def test_verification_other_than_standard_is_refused(method):
    """``rejection_sample_method`` other than "standard" raises, naming the option, instead of
    verifying by the standard rule (what the former V1 ``AscendRejectionSampler`` refused at
    construction)."""
    logits = torch.zeros(2, 8)
    with pytest.raises(NotImplementedError, match="rejection_sample_method other than 'standard'"):
        sd.rejection_sample(logits, None, torch.tensor([0, 1]), torch.tensor([0, 2]),
                            torch.arange(2), torch.arange(1), None, None, torch.tensor([1.0]),
                            torch.tensor([1]), 1, **method)


def test_argument_names_match_the_triton_kernels():
    """vLLM's dispatcher forwards launch arguments by name when they match the kernel's: each
    stand-in MRv2's EAGLE/EAGLE-3/MTP speculators and rejection sampler launch takes the same
    parameters (a wrapper-level stand-in the wrapper's, a kernel-level one the grid and then the
    kernel's)."""
    import inspect

    from vllm.triton_utils.dispatcher import _kernel_arg_names
    from vllm.utils.import_utils import resolve_obj_by_qualname
    from vllm_ascend_platform.host.mrv2_kernels import HostLaunch

    for qualname, impl in sd.KERNELS.items():
        original = resolve_obj_by_qualname(qualname)
        original = getattr(original, "_original_kernel", original)
        names = getattr(original, "arg_names", None) or _kernel_arg_names(original)
        if isinstance(impl, HostLaunch):
            params = [p for p in inspect.signature(impl.fn).parameters.values()
                      if p.kind is not inspect.Parameter.VAR_KEYWORD]
            assert tuple(p.name for p in params[1:]) == tuple(names), qualname
        else:
            assert tuple(inspect.signature(impl).parameters) == tuple(names), qualname
