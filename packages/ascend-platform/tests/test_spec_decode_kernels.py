# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Torch stand-ins for vLLM's EAGLE proposer Triton kernels against per-request loops written
from the kernels' bodies (vllm/v1/spec_decode/utils.py), and their registration by name."""

from __future__ import annotations

import inspect

import pytest
import torch
from vllm_ascend_platform.host import spec_decode_kernels as K

PAD = -1


def _loop_next_token(tokens, discard, backup, vocab):
    next_ids, counts = [], []
    for row, d, b in zip(tokens.tolist(), discard.tolist(), backup.tolist(), strict=True):
        if d:
            next_ids.append(b)
            counts.append(0)
            continue
        valid = [i for i, t in enumerate(row) if t != -1 and t < vocab]
        next_ids.append(row[valid[-1]] if valid else b)
        counts.append(len(valid))
    return next_ids, counts


@pytest.mark.parametrize("seed", range(6))
def test_prepare_next_token_padded(seed):
    g = torch.Generator().manual_seed(seed)
    num_reqs, width, vocab = 5, 4, 50
    tokens = torch.randint(0, vocab + 5, (num_reqs + 2, width), generator=g, dtype=torch.int32)
    # accepted prefix then -1 (rejection sampler output layout), some rows all rejected
    keep = torch.randint(0, width + 1, (num_reqs + 2,), generator=g)
    tokens[torch.arange(width)[None, :] >= keep[:, None]] = -1
    discard = torch.rand(num_reqs, generator=g) < 0.3
    backup = torch.randint(0, vocab, (num_reqs,), generator=g, dtype=torch.int32)
    next_ids = torch.full((num_reqs,), -7, dtype=torch.int32)
    counts = torch.full((num_reqs,), -7, dtype=torch.int32)
    K.eagle_prepare_next_token_padded(tokens, discard, backup, next_ids, counts, vocab, width,
                                      num_reqs, tokens.stride(0), 4)
    want_ids, want_counts = _loop_next_token(tokens[:num_reqs], discard, backup, vocab)
    assert next_ids.tolist() == want_ids
    assert counts.tolist() == want_counts


def test_prepare_inputs_padded():
    cu = torch.tensor([2, 2, 5, 8], dtype=torch.int32)        # drafts 2, 0, 3, 3
    valid = torch.tensor([3, 1, 1, 2], dtype=torch.int32)     # accepted+1
    qsl = torch.tensor([0, 3, 4, 8, 12], dtype=torch.int32)
    idx = torch.zeros(4, dtype=torch.int32)
    rej = torch.zeros(4, dtype=torch.int32)
    K.eagle_prepare_inputs_padded(cu, valid, qsl, idx, rej, 4)
    # rejected = drafts + 1 - valid (0 without drafts); index = last query token - rejected
    assert rej.tolist() == [0, 0, 3, 2]
    assert idx.tolist() == [2, 3, 4, 9]


def test_step_slot_mapping_metadata():
    block, max_len = 4, 10
    positions = torch.tensor([0, 5, 9], dtype=torch.int64)
    table = torch.tensor([[7, 8, 9], [3, 4, 5], [1, 2, 6]], dtype=torch.int32)
    seq = torch.tensor([1, 6, 10], dtype=torch.int32)
    out_pos = torch.full((3,), -9, dtype=torch.int64)
    out_slot = torch.full((5,), -9, dtype=torch.int64)  # 2 padded rows
    K.eagle_step_slot_mapping_metadata(positions, table, table.stride(0), seq, out_pos, out_slot,
                                       block, max_len, 3, PAD, 3)
    assert out_pos.tolist() == [1, 6, 0]                 # 9 + 1 reaches max_model_len -> 0
    assert out_slot.tolist() == [7 * 4 + 1, 4 * 4 + 2, PAD, PAD, PAD]
    assert seq.tolist() == [2, 7, 1]


def _vllm_034() -> bool:
    from vllm_ascend_platform.startup.version_check import uses_model_runner_v2

    return uses_model_runner_v2()


def test_argument_names_match_the_triton_kernels():
    """vLLM's dispatcher forwards launch arguments by name when they match the kernel's.

    vLLM >= 0.34 has no V1 EAGLE proposer (``vllm/v1/spec_decode/utils.py`` is gone); the same
    property is checked there on the stand-ins MRv2's EAGLE/EAGLE-3/MTP speculators and
    rejection sampler launch (``host/mrv2_spec_decode.py``): a wrapper-level stand-in takes the
    wrapper's parameters, a kernel-level one the grid and then the kernel's."""
    from vllm.triton_utils.dispatcher import _kernel_arg_names
    from vllm.utils.import_utils import resolve_obj_by_qualname

    if _vllm_034():
        from vllm_ascend_platform.host import mrv2_spec_decode as sd
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
        return
    for qualname, impl in K.KERNELS.items():
        kernel = resolve_obj_by_qualname(qualname)
        kernel = getattr(kernel, "_original_kernel", kernel)
        names = getattr(kernel, "arg_names", None)
        if names is None:  # vLLM's placeholder without Triton: the Python function
            names = _kernel_arg_names(kernel)
        assert tuple(inspect.signature(impl).parameters) == tuple(names), qualname
