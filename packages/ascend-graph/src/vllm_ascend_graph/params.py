# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Parameter-update hooks run before each ACL graph replay.

A captured NPU graph bakes in host-side scalars of the attention operator
(``npu_fused_infer_attention_score``'s ``actual_seq_lengths`` /
``actual_seq_lengths_kv`` are host int lists, not device tensors), so the values seen
at capture time would be replayed forever. Before each replay the wrapper calls every
registered hook with the step's forward context (its attention metadata holds the
*real* lengths); on NPU the attention layer's hook re-issues the captured operator with
them (torch_npu's ``graph_task_update_begin/end`` path), in emulation nothing was
captured and execution is eager. The platform registers the attention layer's hook by
qualified name (``vllm_ascend_platform.startup.layers.connect_graph_param_updates``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import torch


@dataclasses.dataclass(frozen=True)
class ReplayParams:
    """What a hook gets before one replay.

    Attributes:
        batch_descriptor: vLLM ``BatchDescriptor`` of the (padded) captured batch.
        runtime_mode: ``CUDAGraphMode`` of the replaying wrapper (FULL or PIECEWISE).
        attn_metadata: the forward context's raw ``attn_metadata`` (dict layer -> metadata).

    The convenience views below are snapshots of this step (the first layer's metadata,
    tensors cloned on their device when the params are built: no device read), turned into
    host lists on first access only, so a hook that takes its host lengths from
    ``attn_metadata`` costs no sync:

    * ``seq_lens``: per-request KV lengths including this step's tokens (list of int,
      unpadded requests only), or None without attention metadata;
    * ``query_start_loc``: cumulative query lengths ``[num_reqs + 1]`` (list of int) or None;
    * ``num_actual_tokens``: tokens before padding, or None.
    """

    batch_descriptor: Any
    runtime_mode: Any
    attn_metadata: Any
    snapshot: tuple[Any, Any, Any] = dataclasses.field(default=(None, None, None), repr=False)

    @functools.cached_property
    def _lengths(self) -> tuple[list[int] | None, list[int] | None, int | None]:
        qsl_t, seq_t, num_actual = self.snapshot
        qsl, seq_lens = _as_list(qsl_t), _as_list(seq_t)
        if qsl:
            num_reqs = _real_request_count(qsl)
            qsl = qsl[: num_reqs + 1]
            num_actual = qsl[-1]
            if seq_lens is not None:
                seq_lens = seq_lens[:num_reqs]
        return seq_lens, qsl, None if num_actual is None else int(num_actual)

    @property
    def seq_lens(self) -> list[int] | None:
        return self._lengths[0]

    @property
    def query_start_loc(self) -> list[int] | None:
        return self._lengths[1]

    @property
    def num_actual_tokens(self) -> int | None:
        return self._lengths[2]


ParamUpdateHook = Callable[[ReplayParams], None]

_hooks: list[ParamUpdateHook] = []


def register_param_update_hook(hook: ParamUpdateHook) -> ParamUpdateHook:
    """Run ``hook(ReplayParams)`` before every graph replay (idempotent per hook).

    Raises:
        TypeError: ``hook`` is not callable.
    """
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}.")
    if hook not in _hooks:
        _hooks.append(hook)
    return hook


def unregister_param_update_hook(hook: ParamUpdateHook) -> None:
    """Remove a hook added by :func:`register_param_update_hook` (no error if absent)."""
    if hook in _hooks:
        _hooks.remove(hook)


def _as_list(value: Any) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return [int(v) for v in value.tolist()]
    return [int(v) for v in value]


def _first_metadata(attn_metadata: Any) -> Any:
    if isinstance(attn_metadata, dict):
        return next(iter(attn_metadata.values()), None)
    if isinstance(attn_metadata, (list, tuple)):  # micro-batches: first one's dict
        return _first_metadata(attn_metadata[0]) if attn_metadata else None
    return attn_metadata


def _real_request_count(qsl: list[int]) -> int:
    """Requests before FULL-graph padding.

    vLLM pads a FULL-graph batch to the captured size with zero-length requests at the
    end: ``query_start_loc`` repeats its last value for them and ``seq_lens`` is 0
    (``GPUModelRunner._prepare_inputs`` / ``_build_attention_metadata``). A real request
    always has at least one scheduled token, so trailing zero-length slots are padding.
    """
    n = len(qsl) - 1
    while n > 0 and qsl[n] == qsl[n - 1]:
        n -= 1
    return n


def replay_params(forward_context: Any, runtime_mode: Any) -> ReplayParams:
    """Build :class:`ReplayParams` from vLLM's ``ForwardContext`` for this step.

    Padded request slots are cut from the lazy length views (see
    :func:`_real_request_count`); ``num_actual_tokens`` is then the real token count
    ``query_start_loc[-1]`` (the metadata's own ``num_actual_tokens`` is the padded count
    in FULL mode).
    """
    attn = getattr(forward_context, "attn_metadata", None)
    meta = _first_metadata(attn)
    snapshot = tuple(_snap(getattr(meta, name, None))
                     for name in ("query_start_loc", "seq_lens", "num_actual_tokens"))
    return ReplayParams(
        batch_descriptor=getattr(forward_context, "batch_descriptor", None),
        runtime_mode=runtime_mode,
        attn_metadata=attn,
        snapshot=snapshot,
    )


def _snap(value: Any) -> Any:
    """A copy that later in-place updates of the runner's buffers do not change (a device-side
    clone for tensors: asynchronous, no host read)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    return list(value) if isinstance(value, (list, tuple)) else value


def run_param_update_hooks(params: ReplayParams) -> None:
    """Call every registered hook, in registration order."""
    for hook in list(_hooks):
        hook(params)
