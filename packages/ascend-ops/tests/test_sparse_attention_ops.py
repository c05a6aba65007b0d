# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""DeepSeek-V3.2 sparse-attention ops (``lightning_indexer``, ``sparse_flash_attention``).

Oracles written here independently of ``ascend_ops.reference``:

* indexer: a plain per-batch dense computation in float64 in the form of transformers'
  ``models/deepseek_v32`` ``DeepseekV32Indexer.forward`` (``relu(q . k^T * softmax_scale)``
  weighted by ``weights * n_heads**-0.5`` and summed over heads, causal mask, top-k); the op takes
  the weights with both scales folded in (relu(s * x) = s * relu(x) for s > 0, the form torch_npu's
  operator takes). Ties make the index order ambiguous, so rows are compared by the scores they
  select (and validity, distinctness, -1 padding), not position by position;
* sparse attention: masked dense attention over the request's whole latent cache in float64,
  the mask being the selected set (as transformers' eager path scatters ``topk_indices`` into a
  mask) intersected with causality.

Every case runs on the CPU branches (reference, native) and on the NPU branch over the simulated
torch_npu (``ascend_ops.simulator``); the simulator's indices must equal the CPU branch's bit for
bit (both break ties towards the lower position).
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch

D_IDX, L, R = 128, 512, 64
SCALE = 0.07

#: (q_lens, kv_lens): several requests in TND; decode (q_len 1), chunked prefill (q_len < kv_len,
#: q_len > 1), a whole prefill (q_len == kv_len); key lengths below, at and above the top-k (16)
CASES = {
    "mixed": ([1, 4, 3, 1], [9, 40, 3, 16]),
    "decode": ([1, 1, 1], [50, 7, 16]),
    "chunked_prefill": ([6, 5], [30, 12]),
    "prefill": ([20, 2], [20, 2]),
}
TOPK = 16


def _problem(q_lens, kv_lens, block_size, dtype, *, heads_idx=8, heads=4, seed=0, pad_rows=0):
    """Random TND queries and per-request keys written at random blocks of paged caches (one
    block table for the indexer key cache and the latent / rope caches)."""
    g = torch.Generator().manual_seed(seed)
    blocks = [-(-kv // block_size) for kv in kv_lens]
    nb = sum(blocks) + 3
    perm = torch.randperm(nb, generator=g)
    table = torch.zeros(len(kv_lens), max(blocks), dtype=torch.int32)
    key_cache = torch.randn(nb, block_size, 1, D_IDX, generator=g).to(dtype)  # stale rows elsewhere
    kv_c = torch.randn(nb, block_size, 1, L, generator=g).to(dtype)
    k_pe = torch.randn(nb, block_size, 1, R, generator=g).to(dtype)
    dense, used = [], 0
    for b, kv in enumerate(kv_lens):
        table[b, : blocks[b]] = perm[used : used + blocks[b]].to(torch.int32)
        used += blocks[b]
        k = torch.randn(kv, D_IDX, generator=g).to(dtype)
        c = torch.randn(kv, L, generator=g).to(dtype)
        r = torch.randn(kv, R, generator=g).to(dtype)
        for p in range(kv):
            blk, off = int(table[b, p // block_size]), p % block_size
            key_cache[blk, off, 0], kv_c[blk, off, 0], k_pe[blk, off, 0] = k[p], c[p], r[p]
        dense.append((k, c, r))
    t = sum(q_lens) + pad_rows
    softmax_scale = D_IDX ** -0.5
    raw_weights = torch.randn(t, heads_idx, generator=g)
    return dict(
        query=torch.randn(t, heads_idx, D_IDX, generator=g).to(dtype),
        raw_weights=raw_weights,
        softmax_scale=softmax_scale,
        weights=(raw_weights * heads_idx ** -0.5 * softmax_scale).to(dtype),
        key_cache=key_cache, kv_c=kv_c, k_pe=k_pe, block_table=table, dense=dense,
        q_nope=torch.randn(t, heads, L, generator=g).to(dtype),
        q_pe=torch.randn(t, heads, R, generator=g).to(dtype),
        lens_q=torch.tensor(q_lens).cumsum(0).to(torch.int32),
        lens_kv=torch.tensor(kv_lens, dtype=torch.int32),
        q_lens=list(q_lens), kv_lens=list(kv_lens),
    )


def _rows(p):
    """(t, b, visible, kv_len) of every real query row (causal visibility)."""
    start = 0
    for b, (q_len, kv) in enumerate(zip(p["q_lens"], p["kv_lens"], strict=True)):
        for i in range(q_len):
            yield start + i, b, kv - q_len + i + 1, kv
        start += q_len


def _plain_scores(p, t, b, visible):
    """DeepseekV32Indexer.forward's index scores of row t over its visible keys (float64):
    relu(q . k^T * softmax_scale), weighted by raw_weights * n_heads**-0.5, summed over heads.
    The raw weights are recovered from the ones the op got (after their cast to the dtype)."""
    n = p["query"].shape[1]
    k = p["dense"][b][0][:visible].double()  # [S, D]
    q = p["query"][t].double()  # [H, D]
    scores = torch.relu(q @ k.t() * p["softmax_scale"])  # [H, S]
    raw = p["weights"][t].double() / (n ** -0.5 * p["softmax_scale"])
    return (raw * n ** -0.5) @ scores  # [S]


def _check_indexer(p, got, k=TOPK, atol=1e-2):
    assert got.dtype == torch.int32 and got.shape == (p["query"].shape[0], 1, k)
    real = set()
    for t, b, visible, _kv in _rows(p):
        real.add(t)
        row = got[t, 0].tolist()
        n = min(k, visible)
        assert all(x == -1 for x in row[n:]), (t, row)
        chosen = row[:n]
        assert len(set(chosen)) == n and all(0 <= x < visible for x in chosen), (t, row)
        scores = _plain_scores(p, t, b, visible)
        want = torch.topk(scores, n).values
        torch.testing.assert_close(scores[chosen], want, atol=atol, rtol=1e-2)
        rest = torch.ones(visible, dtype=torch.bool)
        rest[chosen] = False
        if rest.any():
            assert scores[chosen].min() >= scores[rest].max() - atol, t
    for t in range(got.shape[0]):
        if t not in real:  # padding rows
            assert (got[t] == -1).all()


def _dense_sparse_attention(p, indices, causal=True):
    """Masked dense MLA-absorb attention over each request's latent rows (float64)."""
    q_nope, q_pe = p["q_nope"].double(), p["q_pe"].double()
    out = torch.zeros(q_nope.shape, dtype=torch.float64)
    start = 0
    for b, (q_len, kv) in enumerate(zip(p["q_lens"], p["kv_lens"], strict=True)):
        _, c, r = (x.double() for x in p["dense"][b])
        for i in range(q_len):
            t = start + i
            limit = kv - q_len + i + 1 if causal else kv
            row = indices[t, 0].tolist()
            keep = torch.zeros(kv, dtype=torch.bool)
            for x in row[: min(len(row), limit)]:
                if x == -1:
                    break
                if 0 <= x < limit:
                    keep[x] = True
            if not keep.any():
                continue
            s = (q_nope[t] @ c.t() + q_pe[t] @ r.t()) * SCALE  # [N, kv]
            s = s.masked_fill(~keep, float("-inf"))
            out[t] = torch.softmax(s, dim=-1) @ c
        start += q_len
    return out


def _indexer(p, k=TOPK, causal=True):
    return ascend_ops.lightning_indexer(p["query"], p["key_cache"], p["weights"], p["block_table"],
                                        p["lens_q"], p["lens_kv"], k, causal)


def _attend(p, indices, causal=True):
    return ascend_ops.sparse_flash_attention(p["q_nope"], p["q_pe"], p["kv_c"], p["k_pe"], indices,
                                             p["block_table"], p["lens_q"], p["lens_kv"], SCALE, causal)


TOL = {torch.float32: dict(atol=2e-4, rtol=2e-4), torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
       torch.float16: dict(atol=3e-3, rtol=3e-3)}


# ---------------------------------------------------------------- CPU branches

@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("case", sorted(CASES))
def test_indexer_matches_plain_torch(backend, case, block_size):
    p = _problem(*CASES[case], block_size, torch.float32, pad_rows=2 if case == "mixed" else 0)
    _check_indexer(p, _indexer(p), atol=1e-4)


@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sparse_attention_matches_masked_dense(backend, case, block_size, dtype):
    """Indexer -> sparse attention, against the masked dense attention over the selected set."""
    p = _problem(*CASES[case], block_size, dtype, seed=1)
    indices = _indexer(p)
    got = _attend(p, indices)
    assert got.shape == p["q_nope"].shape and got.dtype == dtype
    torch.testing.assert_close(got.double(), _dense_sparse_attention(p, indices), **TOL[dtype])


def test_all_selected_equals_dense_causal_attention(backend):
    """With top-k >= every key length the selection is the whole causal prefix: the result is
    plain causal MLA attention (the dense oracle with every position kept)."""
    p = _problem(*CASES["mixed"], 16, torch.float32, seed=2)
    indices = _indexer(p, k=64)
    every = torch.full_like(indices, -1)
    for t, _b, visible, _kv in _rows(p):
        every[t, 0, :visible] = torch.arange(visible, dtype=torch.int32)
    torch.testing.assert_close(_attend(p, indices), _attend(p, every), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(_attend(p, indices).double(), _dense_sparse_attention(p, every), **TOL[torch.float32])


def test_non_causal_modes(backend):
    """causal=False (sparse_mode 0): every key of the request is visible to every query."""
    p = _problem([3, 2], [3, 10], 16, torch.float32, seed=3)
    got = _indexer(p, k=8, causal=False)
    for t, b, _visible, kv in _rows(p):
        row = got[t, 0].tolist()
        n = min(8, kv)
        assert row[n:] == [-1] * (8 - n) and sorted(set(row[:n])) == sorted(row[:n])
        scores = _plain_scores(p, t, b, kv)
        torch.testing.assert_close(scores[row[:n]], torch.topk(scores, n).values, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(_attend(p, got, causal=False).double(),
                               _dense_sparse_attention(p, got, causal=False), **TOL[torch.float32])


def test_sparse_attention_reads_rows_as_the_kernel_does(backend):
    """Hand-made rows: entries after the first -1 are ignored, positions past the causal limit
    are skipped, only the first min(K, visible) entries count, an empty row gives zeros."""
    p = _problem([2], [6], 16, torch.float32, seed=4)
    rows = torch.tensor([[[3, -1, 0, 1]],  # query 0 sees 0..4: only position 3
                         [[5, 9, 2, -1]]], dtype=torch.int32)  # query 1 sees 0..5: 5, 2 (9 skipped)
    got = _attend(p, rows)
    want = _dense_sparse_attention(p, rows)
    torch.testing.assert_close(got.double(), want, **TOL[torch.float32])
    c = p["dense"][0][1].double()
    torch.testing.assert_close(got[0].double(), c[3].expand(got.shape[1], -1), **TOL[torch.float32])
    empty = torch.tensor([[[-1, 2, 3, 4]], [[-1, -1, -1, -1]]], dtype=torch.int32)
    assert (_attend(p, empty) == 0).all()
    # only the first min(K, visible) entries are read: query 0 (visible 5) with K = 6 ignores the 6th
    wide = torch.tensor([[[9, 9, 9, 9, 9, 1]], [[0, 1, 2, 3, 4, 5]]], dtype=torch.int32)
    assert (_attend(p, wide)[0] == 0).all()


@pytest.mark.parametrize("causal", [True, False])
def test_backends_agree(causal):
    p = _problem(*CASES["mixed"], 16, torch.bfloat16, seed=5)
    results = {}
    for name in ("reference", "native"):
        with ascend_ops.use_backend(name):
            idx = _indexer(p, causal=causal)
            results[name] = (idx, _attend(p, idx, causal=causal))
    assert torch.equal(results["reference"][0], results["native"][0])
    assert torch.equal(results["reference"][1], results["native"][1])


def test_opcheck_and_compile():
    p = _problem([1, 3], [5, 20], 16, torch.float32, seed=6)
    idx = _indexer(p)
    torch.library.opcheck(torch.ops.ascend.lightning_indexer.default,
                          (p["query"], p["key_cache"], p["weights"], p["block_table"], p["lens_q"],
                           p["lens_kv"], TOPK, True))
    torch.library.opcheck(torch.ops.ascend.sparse_flash_attention.default,
                          (p["q_nope"], p["q_pe"], p["kv_c"], p["k_pe"], idx, p["block_table"],
                           p["lens_q"], p["lens_kv"], SCALE, True))

    def step(q, kc, w, qn, qp, c, r, bt, lq, lk):
        sel = ascend_ops.lightning_indexer(q, kc, w, bt, lq, lk, TOPK)
        return ascend_ops.sparse_flash_attention(qn, qp, c, r, sel, bt, lq, lk, SCALE)

    args = (p["query"], p["key_cache"], p["weights"], p["q_nope"], p["q_pe"], p["kv_c"], p["k_pe"],
            p["block_table"], p["lens_q"], p["lens_kv"])
    torch.testing.assert_close(torch.compile(step, fullgraph=True, backend="eager")(*args), step(*args))


# ---------------------------------------------------------------- NPU branch on the simulator

@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("case", sorted(CASES))
def test_npu_branch_matches_cpu_branch_and_oracles(simulated_npu, case, block_size):
    from ascend_ops import simulator

    p = _problem(*CASES[case], block_size, torch.bfloat16, seed=7, pad_rows=1 if case == "decode" else 0)
    with ascend_ops.use_backend("reference"):
        cpu_idx = _indexer(p)
        cpu_out = _attend(p, cpu_idx)
    npu_idx = _indexer(p)
    assert torch.equal(npu_idx, cpu_idx)
    _check_indexer(p, npu_idx)
    npu_out = _attend(p, npu_idx)
    torch.testing.assert_close(npu_out, cpu_out, **TOL[torch.bfloat16])
    torch.testing.assert_close(npu_out.double(), _dense_sparse_attention(p, npu_idx), **TOL[torch.bfloat16])
    assert simulator.ledger().snapshot()["launches"] == {"npu_lightning_indexer": 1, "npu_sparse_flash_attention": 1}


def test_npu_branch_non_causal_matches_cpu_branch(simulated_npu):
    """causal=False is sparse_mode 0 on the operators: every key of the request is visible."""
    p = _problem([3, 2], [3, 40], 128, torch.float16, seed=11)
    with ascend_ops.use_backend("reference"):
        cpu_idx = _indexer(p, causal=False)
        cpu_out = _attend(p, cpu_idx, causal=False)
    npu_idx = _indexer(p, causal=False)
    assert torch.equal(npu_idx, cpu_idx)
    assert (npu_idx[3:, 0, :TOPK] >= 0).all()  # request 1: all 40 keys visible from its first query
    torch.testing.assert_close(_attend(p, npu_idx, causal=False), cpu_out, **TOL[torch.float16])
    torch.testing.assert_close(_attend(p, npu_idx, causal=False).double(),
                               _dense_sparse_attention(p, npu_idx, causal=False), **TOL[torch.float16])


@pytest.mark.sim_only
def test_captured_decode_step_replays_with_the_next_lengths(simulated_npu):
    """Indexer + sparse attention captured in an NPU graph (no host read inside: the lengths stay
    device tensors) and replayed for the next decode step: new queries, every key length + 1, a
    graph-padding row; the replay equals an eager CPU-branch run of that step."""
    from ascend_ops import simulator

    p = _problem([1, 1, 1], [20, 7, 15], 16, torch.bfloat16, seed=12, pad_rows=1)

    def step():
        idx = _indexer(p)
        return idx, _attend(p, idx)

    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        idx, out = step()
    assert g.recorded_ops() == ["npu_lightning_indexer", "npu_sparse_flash_attention"]
    g2 = torch.Generator().manual_seed(13)
    for name in ("query", "q_nope", "q_pe"):
        p[name].copy_(torch.randn(p[name].shape, generator=g2))
    p["lens_kv"].add_(1)
    simulator.ledger().reset()
    g.replay()
    torch.npu.synchronize()
    assert simulator.ledger().replays == 1
    with ascend_ops.use_backend("reference"):
        want_idx, want_out = step()
    assert torch.equal(idx, want_idx) and (idx[3] == -1).all()
    assert int(idx[0, 0].max()) == 20  # the new token of request 0 is a candidate
    torch.testing.assert_close(out, want_out, **TOL[torch.bfloat16])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_npu_branch_pads_heads_to_a_power_of_two(simulated_npu, dtype):
    """N = 3 is not an operator head count: the branch pads to 4 and drops the extra head."""
    p = _problem(*CASES["mixed"], 16, dtype, heads=3, seed=8)
    idx = _indexer(p)
    got = _attend(p, idx)
    assert got.shape == p["q_nope"].shape
    torch.testing.assert_close(got.double(), _dense_sparse_attention(p, idx), **TOL[dtype])


def test_npu_branch_takes_int64_lengths_and_tables(simulated_npu):
    p = _problem(*CASES["decode"], 16, torch.bfloat16, seed=9)
    idx = _indexer(p)
    wide = ascend_ops.lightning_indexer(p["query"], p["key_cache"], p["weights"], p["block_table"].long(),
                                        p["lens_q"].long(), p["lens_kv"].long(), TOPK)
    assert torch.equal(wide, idx)
    out = ascend_ops.sparse_flash_attention(p["q_nope"], p["q_pe"], p["kv_c"], p["k_pe"], idx.long(),
                                            p["block_table"].long(), p["lens_q"].long(), p["lens_kv"].long(),
                                            SCALE)
    torch.testing.assert_close(out, _attend(p, idx), atol=0, rtol=0)


# ---------------------------------------------------------------- bad input

def _bad(p, **change):
    args = dict(query=p["query"], key_cache=p["key_cache"], weights=p["weights"], block_table=p["block_table"],
                actual_seq_lengths_query=p["lens_q"], actual_seq_lengths_key=p["lens_kv"], sparse_count=TOPK)
    args.update(change)
    return args


@pytest.mark.parametrize("change,error,match", [
    (lambda p: dict(query=p["query"].int()), TypeError, "query must be float32"),
    (lambda p: dict(key_cache=p["key_cache"].half()), TypeError, "key_cache dtype"),
    (lambda p: dict(key_cache=p["key_cache"].expand(-1, -1, 2, -1)), ValueError,
     "key_cache must be .* \\(one shared KV head\\)"),
    (lambda p: dict(weights=p["weights"][:, :3]), ValueError, "weights .* must be \\[T, N\\]"),
    (lambda p: dict(weights=p["weights"].half()), TypeError, "weights dtype"),
    (lambda p: dict(block_table=p["block_table"].float()), TypeError, "block_table must be int32 or int64"),
    (lambda p: dict(actual_seq_lengths_key=p["lens_kv"][:2]), ValueError, "one entry per request"),
    (lambda p: dict(sparse_count=0), ValueError, "sparse_count must be an int >= 1"),
    (lambda p: dict(actual_seq_lengths_key=p["lens_kv"] - 5), ValueError,
     "actual_seq_lengths_key\\[2\\]=-2 must be >= its query length 3"),
    (lambda p: dict(actual_seq_lengths_query=torch.tensor([1, 5, 8, 20], dtype=torch.int32)), ValueError,
     "actual_seq_lengths_query ends at 20, past the 9 query rows"),
    (lambda p: dict(block_table=p["block_table"] + 100), ValueError, "block_table\\[0\\] references a block outside"),
    (lambda p: dict(actual_seq_lengths_key=p["lens_kv"] * 10), ValueError, "needs .* blocks but block_table has"),
], ids=["query-dtype", "cache-dtype", "cache-heads", "weights-shape", "weights-dtype", "table-dtype",
        "lengths-count", "sparse-count", "kv-shorter-than-q", "ends-past-T", "block-outside", "table-columns"])
def test_indexer_bad_input_is_refused_by_name(backend, change, error, match):
    p = _problem(*CASES["mixed"], 16, torch.float32)
    with pytest.raises(error, match=match):
        ascend_ops.lightning_indexer(**_bad(p, **change(p)))


@pytest.mark.parametrize("change,error,match", [
    (lambda p: dict(q_pe=p["q_pe"][:, :2]), ValueError, "q_pe .* must be \\[T, N, R\\]"),
    (lambda p: dict(kv_c_cache=p["kv_c"][..., :256]), ValueError, "kv_c_cache width 256 must equal q_nope's"),
    (lambda p: dict(k_pe_cache=p["k_pe"][:2]), ValueError, "same \\[num_blocks, block_size\\]"),
    (lambda p: dict(sparse_indices=p["idx"].float()), TypeError, "sparse_indices must be int32 or int64"),
    (lambda p: dict(sparse_indices=p["idx"][:, :, :0]), ValueError, "sparse_indices .* must be \\[T, 1, K\\]"),
    (lambda p: dict(sparse_indices=p["idx"] - 5), ValueError, "sparse_indices entries must be positions >= 0 or -1"),
    (lambda p: dict(q_pe=p["q_pe"].double()), TypeError, "q_pe must be float32"),
], ids=["rope-heads", "latent-width", "cache-blocks", "indices-dtype", "indices-empty", "indices-below-minus-1",
        "rope-dtype"])
def test_sparse_attention_bad_input_is_refused_by_name(backend, change, error, match):
    p = _problem(*CASES["mixed"], 16, torch.float32)
    p["idx"] = _indexer(p)
    args = dict(q_nope=p["q_nope"], q_pe=p["q_pe"], kv_c_cache=p["kv_c"], k_pe_cache=p["k_pe"],
                sparse_indices=p["idx"], block_table=p["block_table"], actual_seq_lengths_query=p["lens_q"],
                actual_seq_lengths_kv=p["lens_kv"], scale=SCALE)
    args.update(change(p))
    with pytest.raises(error, match=match):
        ascend_ops.sparse_flash_attention(**args)


def _li_call(p, **change):
    kw = dict(query=p["query"], key=p["key_cache"], weights=p["weights"], actual_seq_lengths_query=p["lens_q"],
              actual_seq_lengths_key=p["lens_kv"], block_table=p["block_table"], layout_query="TND",
              layout_key="PA_BSND", sparse_count=TOPK, sparse_mode=3)
    kw.update(change)
    return kw


def _sfa_call(p, idx, **change):
    kw = dict(query=p["q_nope"], key=p["kv_c"], value=p["kv_c"], sparse_indices=idx, scale_value=SCALE,
              block_table=p["block_table"], actual_seq_lengths_query=p["lens_q"], actual_seq_lengths_kv=p["lens_kv"],
              query_rope=p["q_pe"], key_rope=p["k_pe"], sparse_block_size=1, layout_query="TND",
              layout_kv="PA_BSND", sparse_mode=3, attention_mode=2)
    kw.update(change)
    return kw


LI_REFUSALS = [
    ("heads>64", lambda p: dict(query=p["query"].repeat(1, 9, 1)[:, :65].contiguous(),
                                weights=p["weights"].repeat(1, 9)[:, :65].contiguous()), "N1\\) must be <= 64"),
    ("head-dim", lambda p: dict(query=p["query"][..., :64].contiguous(), key=p["key_cache"][..., :64].contiguous()),
     "head dim must be 128"),
    ("float32", lambda p: dict(query=p["query"].float(), key=p["key_cache"].float()), "query must be float16/bfloat16"),
    ("block-size-8", lambda p: dict(key=p["key_cache"].view(-1, 8, 1, D_IDX), block_table=torch.cat(
        [p["block_table"] * 2, p["block_table"] * 2 + 1], 1)), "block_size .* multiple of 16"),
    ("two-key-heads", lambda p: dict(key=p["key_cache"].expand(-1, -1, 2, -1).contiguous()), "one head \\(N2 = 1\\)"),
    ("sparse-count", lambda p: dict(sparse_count=2049), "sparse_count must be in"),
    ("sparse-mode", lambda p: dict(sparse_mode=1), "sparse_mode must be 0 or 3"),
    ("return-value", lambda p: dict(return_value=True), "return_value=True is not supported with PA_BSND"),
    ("int64-lengths", lambda p: dict(actual_seq_lengths_key=p["lens_kv"].long()),
     "actual_seq_lengths_key must be int32"),
    ("table-rows", lambda p: dict(block_table=torch.cat([p["block_table"], p["block_table"]])),
     "block_table must be 2-D with B=4 rows"),
    ("no-query-lengths", lambda p: dict(actual_seq_lengths_query=None), "needs actual_seq_lengths_query"),
    ("weights-dtype", lambda p: dict(weights=p["weights"].half()), "weights must be float32 or query's dtype"),
    ("key-not-contiguous", lambda p: dict(key=p["key_cache"].transpose(0, 1).contiguous().transpose(0, 1)),
     "key must be contiguous"),
]


@pytest.mark.sim_only
@pytest.mark.parametrize("change,match", [c[1:] for c in LI_REFUSALS], ids=[c[0] for c in LI_REFUSALS])
def test_simulated_indexer_refuses_documented_violations(simulated_npu, change, match):
    from ascend_ops.simulator import SimulatedNpuError

    p = _problem(*CASES["mixed"], 16, torch.bfloat16)
    with pytest.raises(SimulatedNpuError, match="npu_lightning_indexer: .*" + match):
        simulated_npu.npu_lightning_indexer(**_li_call(p, **change(p)))


SFA_REFUSALS = [
    ("attention-mode-default", lambda p: dict(attention_mode=0), "attention_mode must be 2"),
    ("no-rope", lambda p: dict(query_rope=None, key_rope=None), "needs query_rope and key_rope"),
    ("latent-256", lambda p: dict(query=p["q_nope"][..., :256].contiguous(), key=p["kv_c"][..., :256].contiguous(),
                                  value=p["kv_c"][..., :256].contiguous()), "head dim must be 512"),
    ("rope-32", lambda p: dict(query_rope=p["q_pe"][..., :32].contiguous(), key_rope=p["k_pe"][..., :32].contiguous()),
     "rope head dim must be 64"),
    ("heads-3", lambda p: dict(query=p["q_nope"][:, :3].contiguous(), query_rope=p["q_pe"][:, :3].contiguous()),
     "power of two in \\[1, 128\\]"),
    ("indices-int64", lambda p: dict(sparse_indices=p["idx"].long()), "sparse_indices must be int32"),
    ("sparse-block-3", lambda p: dict(sparse_block_size=3), "sparse_block_size must be a power of two"),
    ("sparse-block-32", lambda p: dict(sparse_block_size=32), "sparse_block_size 32 must divide block_size 16"),
    ("lse-paged", lambda p: dict(return_softmax_lse=True), "return_softmax_lse=True is not supported with PA_BSND"),
    ("sinks", lambda p: dict(sinks=torch.zeros(4)), "sinks are not supported on Atlas A2/A3"),
    ("value-dtype", lambda p: dict(value=p["kv_c"].half()), "key and value must have query's dtype"),
    ("pre-tokens", lambda p: dict(pre_tokens=100), "pre_tokens / next_tokens support only their default"),
    ("no-kv-lengths", lambda p: dict(actual_seq_lengths_kv=None), "needs actual_seq_lengths_kv"),
    ("short-table", lambda p: dict(block_table=p["block_table"][:, :1].contiguous()), "fewer than the 3 blocks"),
]


@pytest.mark.sim_only
@pytest.mark.parametrize("change,match", [c[1:] for c in SFA_REFUSALS], ids=[c[0] for c in SFA_REFUSALS])
def test_simulated_sparse_attention_refuses_documented_violations(simulated_npu, change, match):
    from ascend_ops.simulator import SimulatedNpuError

    p = _problem(*CASES["mixed"], 16, torch.bfloat16)
    with ascend_ops.use_backend("reference"):
        p["idx"] = _indexer(p)
    with pytest.raises(SimulatedNpuError, match="npu_sparse_flash_attention: .*" + match):
        simulated_npu.npu_sparse_flash_attention(**_sfa_call(p, p["idx"], **change(p)))


@pytest.mark.sim_only
def test_npu_branch_refuses_float32_and_strided_caches(simulated_npu):
    """The NPU branch runs what the operator accepts: float32 is the operator's to refuse (by
    rule name), a strided cache the branch's (a copy would move the whole cache)."""
    from ascend_ops.simulator import SimulatedNpuError

    p = _problem(*CASES["decode"], 16, torch.float32)
    with pytest.raises(SimulatedNpuError, match="npu_lightning_indexer: query must be float16/bfloat16"):
        _indexer(p)
    p = _problem(*CASES["decode"], 16, torch.bfloat16)
    strided = p["key_cache"].transpose(0, 1).contiguous().transpose(0, 1)
    with pytest.raises(ValueError, match="key_cache must be contiguous for torch_npu.npu_lightning_indexer"):
        ascend_ops.lightning_indexer(p["query"], strided, p["weights"], p["block_table"], p["lens_q"],
                                     p["lens_kv"], TOPK)


def test_simulator_availability_follows_the_documents(simulated_npu, monkeypatch):
    from ascend_ops.simulator import SimulatedNpuError

    p = _problem(*CASES["decode"], 16, torch.bfloat16)
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "310P")
    with pytest.raises(SimulatedNpuError, match="npu_lightning_indexer: not available on the simulated SoC 310P"):
        _indexer(p)
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "A2")
    _check_indexer(p, _indexer(p))
