# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""HF transformers greedy oracle for the e2e parity tests.

The oracle is transformers' own ``LlamaForCausalLM`` forward pass (eager attention, float32) on the
same converted SmolLM2 checkpoint vLLM loads: an implementation independent of vLLM and of every
layer of ours. Greedy decoding is a plain loop over the KV-cached forward, so no generation
config (EOS, repetition penalties, ...) can interfere; it never stops early (vLLM runs with
``ignore_eos=True`` to match). Each step keeps the full float32 log-softmax so a divergence can be
judged by the logprob gap between the two candidate tokens. Runs are kept per process and on
disk for the other e2e processes (oracle_cache.py).

``greedy(..., kv_dtype=torch.float8_e5m2)`` models a quantized KV cache: every key and value is
rounded to that format before attention reads it, as vLLM's fp8 cache stores them
(``saturate(x / scale)`` with scale 1.0 when the checkpoint has none, ``vllm/_custom_ops.py``
``reshape_and_cache_flash``; keys after RoPE). Attention over the cache then reads the rounded
values for every token, the current one included, which is what a paged-cache backend does.
"""

from __future__ import annotations

from dataclasses import dataclass

import oracle_cache
import torch
from transformers import DynamicCache


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


class RoundingCache(DynamicCache):
    """A transformers ``DynamicCache`` whose stored keys/values are rounded to ``kv_dtype``.

    ``update`` receives this step's post-RoPE K/V ``[batch, kv_heads, tokens, head_dim]``,
    stores them saturated to ``kv_dtype``'s finite range and read back in their own dtype, and
    returns the whole (rounded) cache for attention, so no unrounded K/V value reaches attention.
    ``noise`` > 0 first scales each element by ``1 + noise * N(0, 1)`` (seeded): a model of
    another float32 summation order upstream of the rounding, which an element close to a
    rounding boundary turns into a whole fp8 step.
    """

    def __init__(self, kv_dtype: torch.dtype, noise: float = 0.0, seed: int = 0):
        super().__init__()
        self.kv_dtype = kv_dtype
        self.noise = noise
        self.generator = torch.Generator().manual_seed(seed)

    def _round(self, x: torch.Tensor) -> torch.Tensor:
        if self.noise:
            x = x * (1 + self.noise * torch.randn(x.shape, generator=self.generator))
        limit = torch.finfo(self.kv_dtype).max
        return x.float().clamp(-limit, limit).to(self.kv_dtype).to(x.dtype)

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        return super().update(self._round(key_states), self._round(value_states), layer_idx,
                              *args, **kwargs)


class HFOracle:
    """Loads the checkpoint once; ``greedy`` results are memoized per (prompt, n)."""

    def __init__(self, model_path: str, model_cls=None):
        """``model_cls``: the transformers class to load (default ``AutoModelForCausalLM``). Name
        it when vLLM may have run in this process: vLLM's ``get_config`` registers some
        model_types with transformers' ``AutoConfig`` under other config classes (vLLM 0.34:
        ``deepseek_v32`` -> ``DeepseekV3Config``, ``vllm/transformers_utils/config.py``), so an
        Auto class loaded afterwards can build another architecture."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = (model_cls or AutoModelForCausalLM).from_pretrained(
            model_path, dtype=torch.float32, attn_implementation="eager")
        self.model.eval()
        self._memo: dict[tuple, OracleRun] = {}
        self._fingerprint: str | None = None

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
    def greedy(self, prompt_ids: list[int], n: int, kv_dtype: torch.dtype | None = None,
               kv_noise: float = 0.0, seed: int = 0) -> OracleRun:
        """Greedy-decode ``n`` tokens after ``prompt_ids`` (ties: lowest token id, as argmax).

        ``kv_dtype`` (e.g. ``torch.float8_e5m2``): K/V rounded to that format in the cache,
        after relative noise ``kv_noise`` drawn from ``seed`` (:class:`RoundingCache`); None
        keeps the float32 cache."""
        key = (tuple(prompt_ids), n, kv_dtype, kv_noise, seed)
        if key in self._memo:
            return self._memo[key]
        stored = self._stored(key)
        if stored is not None:
            self._memo[key] = OracleRun(list(prompt_ids), *stored)
            return self._memo[key]
        ids = torch.tensor([prompt_ids], dtype=torch.long)
        cache = RoundingCache(kv_dtype, kv_noise, seed) if kv_dtype is not None else None
        out = self.model(input_ids=ids, past_key_values=cache, use_cache=True)
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
        if self._fingerprint is not None:
            oracle_cache.store(self._fingerprint, key, tokens, logprobs)
        return run

    def _stored(self, key: tuple) -> tuple[list[int], list[torch.Tensor]] | None:
        """The run stored for ``key`` by another process (oracle_cache.py), or None. The model
        is fingerprinted at the first call, after any subclass has finished building it."""
        if not oracle_cache.enabled():
            return None
        if self._fingerprint is None:
            self._fingerprint = oracle_cache.model_fingerprint(self.model)
        return oracle_cache.load(self._fingerprint, key)
