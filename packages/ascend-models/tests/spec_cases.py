# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rejection-sampler inputs built identically in the test process and in the vLLM oracle
subprocess (tests/_vllm_rejection_oracle.py): spec decode metadata, logits, draft probs and
sampling metadata from a small JSON-able case description."""

from __future__ import annotations

import numpy as np
import torch

#: name -> case; temperature 0 marks a greedy request
CASES = {
    "all_greedy": dict(counts=[3, 1, 4], vocab=32, temperature=[0.0, 0.0, 0.0], seed=1),
    "mixed_draft_probs": dict(counts=[2, 3, 0, 4], vocab=40, temperature=[0.0, 0.8, 1.0, 1.3],
                              draft_probs=True, seed=2),
    "random_ngram_topk_topp": dict(counts=[3, 3, 1], vocab=50, temperature=[0.7, 1.0, 0.9],
                                   top_k=[5, 50, 10], top_p=[0.9, 0.8, 1.0], seed=3),
    # top-k alone (one row keeps the whole vocabulary): in CPU emulation a topk threshold
    "random_ngram_topk_only": dict(counts=[2, 3, 1], vocab=50, temperature=[0.8, 1.0, 1.2],
                                   top_k=[5, 50, 1], seed=6),
    "seeded_with_logprobs": dict(counts=[2, 5], vocab=24, temperature=[1.0, 0.0],
                                 draft_probs=True, generators={0: 77}, logprobs=2, seed=4),
    "accepting_drafts": dict(counts=[4, 4], vocab=16, temperature=[1.0, 0.0], draft_probs=True,
                             peaked=True, seed=5),
}


def build(case: dict, device="cpu"):
    """Returns (spec_decode_metadata, draft_probs, logits, sampling_metadata)."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    g = torch.Generator().manual_seed(case["seed"])
    counts, vocab = case["counts"], case["vocab"]
    batch, n = len(counts), sum(counts)
    logits = torch.randn(n + batch, vocab, generator=g) * 3
    drafts = torch.randint(0, vocab, (n,), generator=g)
    starts = np.concatenate([[0], np.cumsum([c + 1 for c in counts])[:-1]])
    target_idx = np.concatenate([s + np.arange(c) for s, c in zip(starts, counts, strict=True)])
    bonus_idx = starts + np.array(counts)
    if case.get("peaked"):  # drafts = the target's argmax: most drafts are accepted
        logits[torch.from_numpy(target_idx), drafts] += 30.0
    draft_probs = None
    if case.get("draft_probs"):
        draft_logits = torch.randn(n, vocab, generator=g)
        if case.get("peaked"):
            draft_logits[torch.arange(n), drafts] += 3.0
        draft_probs = torch.softmax(draft_logits, -1)
    md = SpecDecodeMetadata(
        draft_token_ids=drafts.to(torch.int32),
        num_draft_tokens=list(counts),
        cu_num_draft_tokens=torch.tensor(np.cumsum(counts), dtype=torch.int32),
        cu_num_sampled_tokens=torch.tensor(np.cumsum([c + 1 for c in counts]), dtype=torch.int32),
        target_logits_indices=torch.tensor(target_idx, dtype=torch.int32),
        bonus_logits_indices=torch.tensor(bonus_idx, dtype=torch.int32),
        logits_indices=torch.arange(n + batch, dtype=torch.int32),
    )
    temp = torch.tensor(case["temperature"], dtype=torch.float32)
    all_greedy = bool((temp == 0).all())
    all_random = bool((temp != 0).all())
    sm = SamplingMetadata(
        temperature=None if all_greedy else temp,
        all_greedy=all_greedy, all_random=all_random,
        top_p=torch.tensor(case["top_p"]) if "top_p" in case else None,
        top_k=torch.tensor(case["top_k"], dtype=torch.int64) if "top_k" in case else None,
        generators={int(i): torch.Generator().manual_seed(s)
                    for i, s in case.get("generators", {}).items()},
        max_num_logprobs=case.get("logprobs"),
        no_penalties=True, prompt_token_ids=None,
        frequency_penalties=torch.zeros(batch), presence_penalties=torch.zeros(batch),
        repetition_penalties=torch.ones(batch),
        output_token_ids=[[] for _ in range(batch)],
        allowed_token_ids_mask=None, bad_words_token_ids={},
        logitsprocs=LogitsProcessors(),
        spec_token_ids=[[] for _ in range(batch)],
    )
    return md, draft_probs, logits, sm


def run(sampler_cls, case: dict, draws: int = 3) -> dict:
    """Output tokens (and logprobs) of ``draws`` calls after ``torch.manual_seed(1000)``."""
    from vllm.v1.sample.sampler import Sampler

    torch.manual_seed(1000)
    rs = sampler_cls(Sampler())
    md, draft_probs, logits, sm = build(case)
    result = {"tokens": [], "logprobs": []}
    for _ in range(draws):
        # vLLM torch.compiles its logprob counting; eager gives the same counts without
        # paying an Inductor compile in each process
        with torch.compiler.set_stance("force_eager"):
            out = rs(md, draft_probs, logits.clone(), sm)
        result["tokens"].append(out.sampled_token_ids.clone())
        lp = out.logprobs_tensors
        result["logprobs"].append(None if lp is None else (lp.logprob_token_ids.clone(),
                                                           lp.logprobs.clone()))
    return result
