# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""KV-cache budget on the (emulated) device: fail fast, say what to change.

vLLM sizes the KV cache from what the worker reports as available. On Ascend the
device memory is the NPU's; in emulation it is ``VLLM_ASCEND_EMULATE_DEVICE_MEMORY``.
``gpu_memory_utilization`` applies to it in both modes. When weights plus
activations leave too little for one ``max_model_len`` sequence, the start stops
here with weight size, budget, shortfall, the settings to change and the largest
``max_model_len`` that fits, rather than with a zero or negative
block count later.
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = float(1 << 30)


class KVBudgetError(ValueError):
    """The device memory budget cannot hold the model plus one sequence of KV cache."""


@dataclass(frozen=True)
class KVBudget:
    """Inputs of the KV-cache budget, all in bytes unless named otherwise.

    Attributes:
        device_memory: total (emulated) device memory.
        utilization: ``gpu_memory_utilization`` (0, 1].
        weights: bytes held by model parameters and buffers.
        activations: peak non-KV working memory of one forward pass (estimate).
        kv_bytes_per_token: KV bytes one token needs across all layers.
        block_size: tokens per KV cache block.
        max_model_len: longest sequence the engine must be able to hold.
    """

    device_memory: int
    utilization: float
    weights: int
    activations: int
    kv_bytes_per_token: int
    block_size: int
    max_model_len: int

    @property
    def budget(self) -> int:
        return int(self.device_memory * self.utilization)

    @property
    def kv_memory(self) -> int:
        return self.budget - self.weights - self.activations

    @property
    def bytes_per_block(self) -> int:
        return self.kv_bytes_per_token * self.block_size

    def needed_for_one_sequence(self) -> int:
        blocks = -(-self.max_model_len // self.block_size)
        return blocks * self.bytes_per_block

    def largest_fitting_len(self) -> int:
        """Largest max_model_len (whole blocks) the KV memory holds; 0 when none."""
        if self.kv_memory <= 0:
            return 0
        return (self.kv_memory // self.bytes_per_block) * self.block_size


def check_kv_budget(b: KVBudget) -> int:
    """Return the KV-cache bytes to report to vLLM, or raise a :class:`KVBudgetError`.

    Raises:
        KVBudgetError: when the budget cannot hold weights + activations + one
            ``max_model_len`` sequence; the message names weight size, budget,
            shortfall, settings to change and (when any fits) the largest
            ``max_model_len`` that fits.
    """
    need = b.needed_for_one_sequence()
    if b.kv_memory >= need:
        return b.kv_memory
    shortfall = need - b.kv_memory
    head = (
        f"Not enough device memory for the KV cache: weights {b.weights / GiB:.3f} GiB + "
        f"activations {b.activations / GiB:.3f} GiB + one max_model_len={b.max_model_len} "
        f"sequence of KV cache {need / GiB:.3f} GiB exceed the budget "
        f"{b.budget / GiB:.3f} GiB (device memory {b.device_memory / GiB:.3f} GiB x "
        f"gpu_memory_utilization {b.utilization}); shortfall {shortfall / GiB:.3f} GiB."
    )
    fix = (
        " Raise VLLM_ASCEND_EMULATE_DEVICE_MEMORY (emulation) or gpu_memory_utilization, "
        "use more devices (tensor_parallel_size), or lower max_model_len"
    )
    fits = b.largest_fitting_len()
    if fits > 0:
        fix += f" (the largest max_model_len that fits is {fits})."
    else:
        fix += " (no max_model_len fits: the weights and activations alone exceed the budget)."
    raise KVBudgetError(head + fix)


def activation_estimate(
    max_num_batched_tokens: int,
    max_num_seqs: int,
    hidden_size: int,
    intermediate_size: int,
    vocab_size: int,
    dtype_bytes: int,
) -> int:
    """Peak working memory of one forward pass, in bytes (an upper-bound estimate).

    CPU emulation has no device allocator to measure a profiling run, so this
    counts the largest live tensors of a dense decoder step: the residual stream
    and normed input, the fused QKV/gate-up projection output and the float32
    logits with their sampling copies.
    """
    per_token = (4 * hidden_size + 2 * intermediate_size) * dtype_bytes
    logits = 3 * max_num_seqs * vocab_size * 4
    return max_num_batched_tokens * per_token + logits
