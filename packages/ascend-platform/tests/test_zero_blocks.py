# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""KV-block zeroing (worker/kv_zeroing.py): manager blocks -> kernel blocks, zeroing asked of the
layer's backend (``zero_kv_cache_blocks``) when it offers it, plain dim-0 zeroing otherwise.

The runner's entry point is called on a stand-in holding only what it reads (vLLM's
``kv_cache_config`` and ``compilation_config.static_forward_context``): the zeroer Model Runner
V2's ``_init_kv_zero_meta`` installs (``self.kv_block_zeroer.zero_block_ids``,
vllm/v1/worker/gpu/model_runner.py)."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from vllm.v1.kv_cache_interface import FullAttentionSpec


def _zero(runner, block_ids):
    """The runner's entry point for zeroing ``block_ids``."""
    from vllm_ascend_platform.worker.model_runner_v2 import NPUModelRunnerV2

    NPUModelRunnerV2._init_kv_zero_meta(runner)
    runner.kv_block_zeroer.zero_block_ids(block_ids)


def _runner(layers: dict, num_blocks: int):
    spec = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=8, dtype=torch.float32)
    group = SimpleNamespace(kv_cache_spec=spec, layer_names=list(layers))
    return SimpleNamespace(
        kv_cache_config=SimpleNamespace(num_blocks=num_blocks, kv_cache_groups=[group]),
        compilation_config=SimpleNamespace(static_forward_context=layers),
    )


def test_backend_zeroing_gets_kernel_block_ids():
    calls = []

    class Backend:
        @staticmethod
        def zero_kv_cache_blocks(kv_cache, block_ids, layer):
            calls.append((kv_cache, block_ids.tolist(), layer))

    # 4 manager blocks split into 2 kernel blocks each -> a view with 8 blocks on dim 0
    kv = torch.ones(8, 1, 8, 16)
    layer = SimpleNamespace(kv_cache=kv, get_attn_backend=lambda: Backend)
    _zero(_runner({"l0": layer}, num_blocks=4), [1, 3])
    assert len(calls) == 1 and calls[0][0] is kv and calls[0][2] is layer
    assert calls[0][1] == [2, 3, 6, 7]
    assert (kv == 1).all(), "the backend owns the zeroing; the runner wrote nothing itself"


def test_backend_without_hook_gets_dim0_rows_zeroed():
    kv = torch.ones(4, 1, 16, 16)
    layer = SimpleNamespace(kv_cache=kv, get_attn_backend=lambda: object)
    _zero(_runner({"l0": layer}, num_blocks=4), [2])
    assert (kv[2] == 0).all() and (kv[[0, 1, 3]] == 1).all()
