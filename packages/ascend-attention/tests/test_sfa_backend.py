# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendSFABackend (DeepSeek-V3.2 sparse MLA) against a naive oracle written from the DSA
definition: each query row attends, with absorbed weights, only the latent rows whose logical
positions the indexer selected; plus the indexer cache spec, the metadata builder and the
backend / wrapper registration."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

N, L, R, NOPE, V, BS, K = 2, 8, 4, 6, 5, 4, 3  # heads, latent, rope, nope, v, block size, top-k
SCALE = 0.3


@pytest.fixture
def impl():
    from vllm.v1.attention.backend import AttentionType
    from vllm_ascend_attention.backends.sfa import AscendSFAImpl

    g = torch.Generator().manual_seed(0)
    w = torch.randn(N * (NOPE + V), L, generator=g) / L**0.5
    obj = AscendSFAImpl(N, L + R, SCALE, 1, None, None, "auto", None, AttentionType.DECODER, None,
                        q_lora_rank=8, kv_lora_rank=L, qk_nope_head_dim=NOPE, qk_rope_head_dim=R,
                        qk_head_dim=NOPE + R, v_head_dim=V, kv_b_proj=lambda x: (x @ w.t(), None),
                        topk_indices_buffer=torch.full((16, K), -1, dtype=torch.int32),
                        index_group_builder=None)
    return obj


def _meta(ends, kv_lens, table, n):
    from vllm_ascend_attention.backends.sfa_metadata import AscendSFAMetadata

    b = len(ends)
    return AscendSFAMetadata(num_actual_tokens=n, num_reqs=b, ends=torch.tensor(ends, dtype=torch.int32),
                             kv_lens=torch.tensor(kv_lens, dtype=torch.int32),
                             block_table=torch.tensor(table, dtype=torch.int32),
                             slot_mapping=torch.zeros(n, dtype=torch.long), max_query_len=max(ends),
                             max_seq_len=max(kv_lens), num_decodes=b, num_decode_tokens=n)


def test_sparse_attention_reads_only_the_selected_positions(impl):
    """Two requests (a 3-token chunk over 6 cached positions, and a decode over 5), each row
    attending its top-k logical positions through the block table; one padding row."""
    g = torch.Generator().manual_seed(1)
    lat = [torch.randn(9, L + R, generator=g), torch.randn(5, L + R, generator=g)]
    tables = [[4, 1, 6], [2, 0, 0]]
    cache = torch.zeros(8, 1, BS, L + R)
    for latent, blocks in zip(lat, tables, strict=True):
        slots = torch.tensor([blocks[p // BS] * BS + p % BS for p in range(latent.shape[0])])
        impl.do_kv_cache_update(latent[:, :L], latent[:, L:].unsqueeze(1), cache, slots, "auto", None)
    # rows: request 0 positions 6, 7, 8 (causal), request 1 position 4; one padding row
    picks = [[0, 5, 6], [7, 2, -1], [8, 1, 3], [4, 0, 2]]
    impl.topk_indices_buffer[:4] = torch.tensor(picks, dtype=torch.int32)
    q_abs = torch.randn(5, N, L, generator=g)
    q_pe = torch.randn(5, N, R, generator=g)
    md = _meta([3, 4], [9, 5], tables, 4)
    with pytest.raises(RuntimeError, match="record_logical_topk_ready"):
        impl.forward_mqa((q_abs, q_pe), cache, md, None)
    impl.record_logical_topk_ready()
    out, lse = impl.forward_mqa((q_abs, q_pe), cache, md, None)
    assert lse is None and out.shape == (5, N, L)
    owners = [0, 0, 0, 1]
    for row, (req, sel) in enumerate(zip(owners, picks, strict=True)):
        chosen = torch.tensor([p for p in sel if p >= 0])
        rows = lat[req][chosen].double()
        for h in range(N):
            s = (rows[:, :L] @ q_abs[row, h].double() + rows[:, L:] @ q_pe[row, h].double()) * SCALE
            want = torch.softmax(s, 0) @ rows[:, :L]
            torch.testing.assert_close(out[row, h].double(), want, atol=1e-5, rtol=1e-5)
    assert torch.equal(out[4], torch.zeros(N, L))  # the padding row


def test_impl_needs_the_topk_buffer():
    from vllm.v1.attention.backend import AttentionType
    from vllm_ascend_attention.backends.sfa import AscendSFAImpl

    with pytest.raises(ValueError, match="topk_indices_buffer"):
        AscendSFAImpl(N, L + R, SCALE, 1, None, None, "auto", None, AttentionType.DECODER, None,
                      q_lora_rank=8, kv_lora_rank=L, qk_nope_head_dim=NOPE, qk_rope_head_dim=R,
                      qk_head_dim=NOPE + R, v_head_dim=V, kv_b_proj=None)


def test_backend_identity_and_graph_support():
    from vllm.v1.attention.backend import AttentionCGSupport, MultipleOf
    from vllm_ascend_attention.backends.sfa import AscendSFABackend, AscendSFAImpl
    from vllm_ascend_attention.backends.sfa_metadata import AscendSFAMetadataBuilder
    from vllm_ascend_attention.sparse_indexer import AscendSFAIndexerBackend

    assert AscendSFABackend.get_name() == "ASCEND_SFA" and AscendSFABackend.is_sparse()
    assert AscendSFABackend.is_mla() and AscendSFABackend.get_impl_cls() is AscendSFAImpl
    assert AscendSFAImpl.is_sparse and not AscendSFAImpl.supports_dense_mha_prefill
    assert AscendSFABackend.get_builder_cls() is AscendSFAMetadataBuilder
    assert AscendSFAIndexerBackend.get_builder_cls() is AscendSFAMetadataBuilder
    assert AscendSFAIndexerBackend.get_supported_head_sizes() == [128]
    sizes = AscendSFAIndexerBackend.get_supported_kernel_block_sizes()
    assert len(sizes) == 1 and isinstance(sizes[0], MultipleOf) and sizes[0].base == 16
    assert AscendSFAMetadataBuilder._cudagraph_support == AttentionCGSupport.NEVER


def test_builder_sends_every_row_to_mqa():
    from vllm_ascend_attention.backends.sfa_metadata import AscendSFAMetadataBuilder

    builder = AscendSFAMetadataBuilder(SimpleNamespace(block_size=16), ["l"], None, torch.device("cpu"))
    cm = SimpleNamespace(num_reqs=2, num_actual_tokens=5,
                         query_start_loc=torch.tensor([0, 4, 5, 5], dtype=torch.int32),
                         seq_lens=torch.tensor([10, 7, 0], dtype=torch.int32),
                         block_table_tensor=torch.arange(9, dtype=torch.int32).view(3, 3),
                         slot_mapping=torch.arange(6), max_query_len=4, max_seq_len=10)
    md = builder.build(0, cm)
    assert md.ends.tolist() == [4, 5] and md.kv_lens.tolist() == [10, 7]
    assert md.block_table.shape == (2, 3) and md.ends.dtype == torch.int32
    assert md.num_decode_tokens == md.num_actual_tokens == 5 and md.num_decodes == 2
    assert md.prefill is None and md.decode is None and md.num_prefills == 0


def test_indexer_cache_spec_is_model_dtype_x_head_dim_at_our_block_size():
    from vllm.v1.kv_cache_interface import MLAAttentionSpec, SparseCacheRole
    from vllm_ascend_attention.sparse_indexer import AscendIndexerCache, AscendSFAIndexerBackend

    cache = AscendIndexerCache.__new__(AscendIndexerCache)
    torch.nn.Module.__init__(cache)
    cache.head_dim, cache.dtype = 128, torch.bfloat16
    cache.cache_config = SimpleNamespace(block_size=128)
    spec = cache.get_kv_cache_spec(None)
    assert isinstance(spec, MLAAttentionSpec)
    assert (spec.block_size, spec.head_size, spec.dtype, spec.num_kv_heads) == (128, 128, torch.bfloat16, 1)
    assert spec.cache_role == SparseCacheRole.INDEXER
    assert spec.page_size_bytes == 128 * 128 * 2  # no uint8 x 132 FP8 rows
    assert cache.get_attn_backend() is AscendSFAIndexerBackend
    # vLLM binds [num_blocks, 1, block_size, head_dim]; the operator reads PA_BSND
    cache.bind_kv_cache(torch.zeros(3, 1, 128, 128, dtype=torch.bfloat16))
    assert cache.kv_cache.shape == (3, 128, 1, 128) and cache.kv_cache.is_contiguous()


def test_register_installs_the_mla_wrapper():
    import vllm_ascend_attention as va
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm_ascend_attention.mla_wrapper import AscendMultiHeadLatentAttentionWrapper, register_oot

    va.register()
    assert va.BACKENDS["ASCEND_SFA"].endswith("AscendSFABackend")
    assert op_registry_oot["MultiHeadLatentAttentionWrapper"] is AscendMultiHeadLatentAttentionWrapper
    assert register_oot() is False  # idempotent


def test_upstream_contract_the_wrapper_relies_on():
    """Drift check: AscendMultiHeadLatentAttentionWrapper keeps upstream's ``forward`` and swaps
    only ``self.indexer``; it relies on the call shape of that forward and on the attribute names
    of upstream's ``Indexer`` (vllm/model_executor/layers/mla.py, models/deepseek_v2.py)."""
    import inspect

    from vllm.model_executor.layers.mla import MultiHeadLatentAttentionWrapper
    from vllm.model_executor.models.deepseek_v2 import Indexer

    forward = inspect.getsource(MultiHeadLatentAttentionWrapper.forward)
    assert "self.indexer(hidden_states, q_c, positions, self.indexer_rope_emb)" in forward
    assert "self.mla_attn.impl.record_logical_topk_ready()" in forward
    init = inspect.getsource(Indexer.__init__)
    for attr in ("wq_b", "wk_weights_proj", "k_norm", "topk_tokens", "n_head", "head_dim", "rope_dim",
                 "softmax_scale", "topk_indices_buffer", "k_cache", "indexer_op"):
        assert f"self.{attr} =" in init, attr
