# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``PunicaWrapperNPU``: vLLM 0.32's punica interface (``vllm/lora/punica_wrapper/punica_base.py``)
on the ``ascend_ops`` LoRA ops.

vLLM's LoRA layers (``vllm/lora/layers/``: column/row parallel linear, merged qkv / gate_up,
vocab-parallel embedding, logits processor) slice the adapters for tensor parallelism and call
this wrapper for the products; the worker's ``LoRAModelRunnerMixin`` calls ``update_metadata``
once per step, outside the model forward.

Graph safety (docs/simulated-npu.md, graph replay): the forward path reads only device tensors:
``_token_lora_indices`` and ``_sampler_indices`` are persistent buffers sized for the largest
batch, refilled in place every step (entries past the step's tokens set to -1), and each op
takes ``buffer[:x.size(0)]``, a view whose length is the batch's (padded) size. A captured graph
therefore replays with the current adapter of every token; no host list of adapter ids is baked
into a captured region. The segment (SGMV) form, whose segment count is a host int of the step,
is used only when the forward runs eagerly (not under ``torch.compile`` tracing and not inside a
device-graph capture); every other call uses the per-token (BGMV) form.

Adapter slot -1 is "no adapter" (the base model for that token), as in vLLM's Triton kernels.
"""

from __future__ import annotations

from typing import Any

import ascend_ops
import torch
from ascend_ops import device as ao_device
from vllm.lora.punica_wrapper.punica_base import PunicaWrapperBase


def _eager() -> bool:
    return not torch.compiler.is_compiling() and not ao_device.is_capturing()


class PunicaWrapperNPU(PunicaWrapperBase):
    """Multi-LoRA state of one model (per-token adapter slots) and its LoRA products.

    Constructed by ``vllm.lora.punica_wrapper.punica_selector.get_punica_wrapper`` with
    (max_num_batched_tokens, max_batches, device, lora_config=...); the platform names it by
    qualified name (``NPUPlatform.get_punica_wrapper``).
    """

    def __init__(self, max_num_batched_tokens: int, max_batches: int,
                 device: torch.device | str, **kwargs: Any):
        super().__init__(max_num_batched_tokens, max_batches, device)
        # -1 everywhere: a graph captured before the first update reads valid "no adapter" slots
        self._token_lora_indices.fill_(-1)
        self._sampler_indices.fill_(-1)
        self._tokens = 0

    # -- metadata (host side, once per step, outside any captured region) -------------------
    def update_metadata(self, mapping, lora_index_to_id, max_loras, vocab_size, **kwargs):
        """Refill the index buffers in place for this step (vLLM ``convert_mapping``)."""
        super().update_metadata(mapping, lora_index_to_id, max_loras, vocab_size, **kwargs)
        n_tok, n_samp = self.indices_len[0], self.indices_len[1]
        self._token_lora_indices[n_tok:].fill_(-1)
        self._sampler_indices[n_samp:].fill_(-1)
        self._tokens = n_tok

    def _token_idx(self, rows: int) -> torch.Tensor:
        return self._token_lora_indices[:rows]

    def token_lora_indices_for(self, rows: int) -> torch.Tensor:
        """Adapter slot per token for the first ``rows`` tokens (device view, -1 = none); read
        by the MoE expert LoRA (``moe_experts.py``)."""
        return self._token_lora_indices[:rows]

    def _use_segments(self, rows: int) -> bool:
        # SGMV pays off when tokens share adapters in long runs (prefill); its metadata (segment
        # count, token total) are host values of this step, so only in eager execution.
        # _eager() first: under torch.compile tracing no host attribute below is read.
        return (_eager() and self.is_prefill and not self.no_lora
                and rows >= self._tokens == self.token_nums and self.batch_size < rows)

    def _skip(self) -> bool:
        """No token of this step has an adapter and the forward runs eagerly: nothing to add
        (vLLM's CPU wrapper returns early the same way); graphs always run the ops."""
        return _eager() and self.is_prefill and self.no_lora

    # -- products ----------------------------------------------------------------------------
    def _shrink(self, y: torch.Tensor, x: torch.Tensor, w: torch.Tensor, scale: float) -> None:
        rows = x.size(0)
        if self._use_segments(rows):
            starts, lens, loras, *_ = self.prefill_metadata
            ascend_ops.sgmv_shrink(x, w, lens, loras, self.token_nums, scale, y)
        else:
            ascend_ops.lora_shrink(x, w, self._token_idx(rows), scale, y)

    def _expand(self, y: torch.Tensor, x: torch.Tensor, w: torch.Tensor, offset: int,
                size: int, add_inputs: bool) -> None:
        rows = x.size(0)
        if self._use_segments(rows):
            starts, lens, loras, *_ = self.prefill_metadata
            ascend_ops.sgmv_expand(x, w, lens, loras, self.token_nums, y, offset, size,
                                   add_inputs)
        else:
            ascend_ops.lora_expand(x, w, self._token_idx(rows), y, offset, size, add_inputs)

    def add_shrink(self, y, x, lora_a_stacked, scale, **kwargs: Any) -> None:
        """``y[i] = scale * x @ lora_a_stacked[i]^T`` per token's adapter, for every slice i."""
        x = x.view(-1, x.shape[-1])
        if self._skip():  # the expand that reads y is skipped too
            return
        for i, w in enumerate(lora_a_stacked):
            self._shrink(y[i].view(-1, y[i].shape[-1]), x, w, scale)

    def add_expand(self, y, x, lora_b_stacked, output_slices, offset_start: int = 0,
                   add_inputs: bool = True, **kwargs: Any) -> None:
        """``y[:, off_i:off_i + n_i] (+)= x[i] @ lora_b_stacked[i]^T`` for the packed slices."""
        if self._skip():
            return
        y2 = y.view(-1, y.shape[-1])
        offset = offset_start
        for i, w in enumerate(lora_b_stacked):
            self._expand(y2, x[i], w, offset, output_slices[i], add_inputs)
            offset += output_slices[i]

    def add_lora_embedding(self, y, x, lora_b_stacked, add_inputs: bool = True,
                           **kwargs: Any) -> None:
        """Vocab-parallel embedding LoRA: only the expand (``y += x @ lora_b^T``)."""
        if self._skip():
            return
        size = min(lora_b_stacked.shape[-2], y.shape[-1])
        self._expand(y, x, lora_b_stacked, 0, size, add_inputs)

    def add_lora_linear(self, y, x, lora_a_stacked, lora_b_stacked, scale, output_slices, *,
                        buffer=None, **kwargs: Any) -> None:
        """Every slice of a (packed) linear layer: ``y[:, slice_i] += scale * x A_i^T B_i^T``.

        One fused ``ascend_ops.lora_linear`` per slice (on the NPU a single
        ``npu_batch_gather_matmul_`` with weight_a and weight_b). The eager prefill path goes
        through the segment shrink/expand with a float32 buffer instead.
        """
        if len(lora_a_stacked) != len(lora_b_stacked) or len(lora_b_stacked) != len(output_slices):
            raise ValueError("lora_a_stacked, lora_b_stacked and output_slices must have one "
                             "entry per slice")
        if self._skip():
            return
        x2 = x.view(-1, x.shape[-1])
        y2 = y.view(-1, y.shape[-1])
        rows = x2.size(0)
        if self._use_segments(rows):
            rank = lora_b_stacked[0].size(-1)
            if buffer is None:
                buffer = tuple(torch.zeros(rows, rank, dtype=torch.float32, device=x.device)
                               for _ in output_slices)
            self.add_shrink(buffer, x2, lora_a_stacked, scale)
            self.add_expand(y2, buffer, lora_b_stacked, output_slices, add_inputs=True)
            return
        idx = self._token_idx(rows)
        offset = 0
        for a, b, size in zip(lora_a_stacked, lora_b_stacked, output_slices, strict=True):
            ascend_ops.lora_linear(y2, x2, a, b, idx, scale, offset, size)
            offset += size

    def add_lora_logits(self, y, x, lora_a_stacked, lora_b_stacked, scale, *, buffer=None,
                        **kwargs: Any) -> None:
        """LM-head LoRA on the sampled rows (``sampler_indices``: one adapter per request)."""
        if self._skip():
            return
        y2 = y.view(-1, y.shape[-1])
        x2 = x.view(-1, x.shape[-1])
        idx = self._sampler_indices[: x2.size(0)]
        size = min(lora_b_stacked.shape[-2], y2.shape[-1])
        ascend_ops.lora_linear(y2, x2, lora_a_stacked, lora_b_stacked, idx, scale, 0, size)

    def apply_lora_full_linear(self, y, x, weight_stacked, bias_stacked, module_enabled) -> None:
        """Request-routed full linear weights (vLLM's trainable-token style modules)."""
        adapter_y = torch.zeros((x.size(0), weight_stacked.size(-2)), dtype=torch.float32,
                                device=x.device)
        ascend_ops.lora_shrink(x, weight_stacked, self._sampler_indices[: x.size(0)], 1.0,
                               adapter_y)
        y.copy_(self._select_full_linear_output(y, adapter_y, bias_stacked, module_enabled))
