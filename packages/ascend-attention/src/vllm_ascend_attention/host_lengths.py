# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Per-step host lengths for ``npu_fused_infer_attention_score`` (built once per step).

FIA takes ``actual_seq_lengths`` (cumulative query ends, TND) and
``actual_seq_lengths_kv`` as host int lists. They are built here from the host
copies vLLM 0.32's ``CommonAttentionMetadata`` carries (``query_start_loc_cpu``,
``seq_lens_cpu_upper_bound``; ``vllm/v1/attention/backend.py``), never by reading
the device tensors back (a sync per layer, and illegal inside a graph capture).

FULL-graph batches are padded (``GPUModelRunner._build_attention_metadata``): the
token count is the captured size ``T``, padded request slots have zero query and
KV length and point at the null block (``NULL_BLOCK_ID`` 0), and the padding tokens
belong to no request. A captured FIA call reads all ``T`` query rows, so its
cumulative ends must reach ``T``: the padding tokens are given to the padded
request slots as self-contained dummy requests (query length == KV length, read
through the null-block rows), whose output rows are never used.
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class HostLengths:
    """Host lengths of one step.

    Attributes:
        ends: cumulative query ends per request slot (``actual_seq_lengths``).
        kv_lens: KV length per request slot (``actual_seq_lengths_kv``).
        num_tokens: query rows the call reads (``ends[-1]``, 0 without requests).
    """

    ends: list[int]
    kv_lens: list[int]

    @property
    def num_tokens(self) -> int:
        return self.ends[-1] if self.ends else 0


def upper_bound_is_exact(vllm_config) -> bool:
    """Whether ``seq_lens_cpu_upper_bound`` holds the exact KV lengths of every request.

    vLLM 0.32 documents it as exact except for decode rows under asynchronous speculative
    decoding, where it assumes every draft of the previous step was accepted
    (``CommonAttentionMetadata.seq_lens_cpu_upper_bound``, ``vllm/v1/attention/backend.py``).
    The EAGLE/MTP proposer also advances ``seq_lens`` on the device between its draft steps
    (``eagle_step_update_slot_mapping_and_metadata``, ``vllm/v1/spec_decode/utils.py``)
    without touching the host copy. So the copy is trusted only without speculative decoding
    or for a method without a draft model that runs synchronously (n-gram, suffix).
    """
    spec = getattr(vllm_config, "speculative_config", None)
    if spec is None:
        return True
    if getattr(vllm_config.scheduler_config, "async_scheduling", False):
        return False
    return not spec.use_eagle() and not spec.uses_draft_model()


def seq_lens_host(common_attn_metadata, exact_upper_bound: bool) -> torch.Tensor:
    """Host KV lengths ``[num_reqs]`` of a step: vLLM's host copy when it is exact (see
    :func:`upper_bound_is_exact`), else one read of the device ``seq_lens`` per metadata
    build -- a host sync outside any graph (metadata is built before a replay), never per layer.
    """
    cm = common_attn_metadata
    if exact_upper_bound and cm.seq_lens_cpu_upper_bound is not None:
        return cm.seq_lens_cpu_upper_bound[: cm.num_reqs]
    return cm.seq_lens[: cm.num_reqs].cpu()


def build(query_start_loc_cpu: torch.Tensor, seq_lens_cpu: torch.Tensor, num_tokens: int,
          max_kv_per_request: int) -> HostLengths:
    """Host lengths for ``num_reqs = len(seq_lens_cpu)`` request slots over ``num_tokens`` rows.

    Args:
        query_start_loc_cpu: CPU int ``[num_reqs + 1]`` cumulative query lengths.
        seq_lens_cpu: CPU int ``[num_reqs]`` KV lengths (0 for padded slots).
        num_tokens: rows of the (possibly padded) query.
        max_kv_per_request: block-table columns * block size (a dummy request's bound).

    Returns:
        :class:`HostLengths`; ``num_tokens`` of it is ``num_tokens`` when the padding
        tokens could be given to padded slots, else the real token count (callers
        then attend over the real rows only and leave the rest).
    """
    qsl = [int(v) for v in query_start_loc_cpu.tolist()]
    kv_lens = [int(v) for v in seq_lens_cpu.tolist()]
    ends = qsl[1:]
    if not ends:
        return HostLengths([], [])
    pad = num_tokens - ends[-1]
    slot = len(ends)
    while slot > 0 and ends[slot - 1] == (ends[slot - 2] if slot > 1 else 0) and kv_lens[slot - 1] == 0:
        slot -= 1  # trailing empty (padded) slots: [slot, len) are free for dummies
    free = range(slot, len(ends))
    if pad <= 0 or len(free) * max_kv_per_request < pad:
        return HostLengths(ends, kv_lens)
    end = ends[slot - 1] if slot > 0 else 0
    for i in free:
        take = min(pad, max_kv_per_request)
        pad -= take
        end += take
        ends[i] = end
        kv_lens[i] = take
    return HostLengths(ends, kv_lens)
