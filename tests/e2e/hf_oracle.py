# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""HF transformers greedy oracle for the e2e parity tests.

The oracle is transformers' own ``LlamaForCausalLM`` forward pass (eager attention, float32) on the
same converted SmolLM2 checkpoint vLLM loads: an implementation independent of vLLM and of every
layer of ours. Greedy decoding is a plain loop over the KV-cached forward, so no generation
config (EOS, repetition penalties, ...) can interfere; it never stops early (vLLM runs with
``ignore_eos=True`` to match). Each step keeps the full float32 log-softmax so a divergence can be
judged by the logprob gap between the two candidate tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class OracleRun:
    """One greedy continuation.

    Attributes:
        prompt_ids: prompt token ids.
        tokens: the ``n`` greedily chosen token ids.
        logprobs: per step, float32 log-softmax over the vocabulary, shape ``[vocab]``.
    """

    prompt_ids: list[int]
    tokens: list[int]
    logprobs: list[torch.Tensor]

    def top(self, step: int, k: int = 5) -> list[int]:
        """Token ids of the ``k`` most likely tokens at ``step`` (most likely first)."""
        return torch.topk(self.logprobs[step], k).indices.tolist()


class HFOracle:
    """Loads the checkpoint once; ``greedy`` results are memoized per (prompt, n)."""

    def __init__(self, model_path: str):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_path, dtype=torch.float32, attn_implementation="eager")
        self.model.eval()
        self._memo: dict[tuple[tuple[int, ...], int], OracleRun] = {}

    def encode_text(self, text: str) -> list[int]:
        """Token ids of raw ``text`` (the tokenizer's own special-token policy)."""
        return list(self.tokenizer(text)["input_ids"])

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of ``messages`` under the checkpoint's chat template, assistant turn opened."""
        out = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                 tokenize=True)
        ids = out["input_ids"] if hasattr(out, "keys") else out
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        return [int(i) for i in ids]

    @torch.inference_mode()
    def greedy(self, prompt_ids: list[int], n: int) -> OracleRun:
        """Greedy-decode ``n`` tokens after ``prompt_ids`` (ties: lowest token id, as argmax)."""
        key = (tuple(prompt_ids), n)
        if key in self._memo:
            return self._memo[key]
        ids = torch.tensor([prompt_ids], dtype=torch.long)
        out = self.model(input_ids=ids, use_cache=True)
        tokens, logprobs = [], []
        for step in range(n):
            lp = torch.log_softmax(out.logits[0, -1].to(torch.float32), dim=-1)
            tok = int(torch.argmax(lp))
            tokens.append(tok)
            logprobs.append(lp)
            if step + 1 < n:
                out = self.model(input_ids=torch.tensor([[tok]]),
                                 past_key_values=out.past_key_values, use_cache=True)
        run = OracleRun(list(prompt_ids), tokens, logprobs)
        self._memo[key] = run
        return run
