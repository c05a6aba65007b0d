# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Updating attention's host arguments in captured FULL graphs (torch_npu's task-update path).

A captured NPU graph replays ``npu_fused_infer_attention_score`` with the host
``actual_seq_lengths`` / ``actual_seq_lengths_kv`` it saw at capture. torch_npu's
documented way to change them (``torch_npu/npu/graphs.py``:
``graph_task_group_begin/end``, ``graph_task_update_begin/end``), used by
vllm-ascend for its FIA graph path (``vllm_ascend/compilation/acl_graph.py``,
``update_attn_params``), is:

* capture: per layer, an ``ExternalEvent`` the graph waits on (then resets), and the
  attention call as its own task group -> a handle (:func:`capture_call`);
* before each replay: wait for the previous replay (synchronize the current stream), then
  re-issue each layer's call with the step's real lengths
  between ``graph_task_update_begin(update_stream, handle)`` and
  ``graph_task_update_end(update_stream)`` writing the *captured* output tensors
  (the ``.out`` overload), then record the event (:func:`update_graph_params`).

Records are kept per batch descriptor (vLLM's ``BatchDescriptor``, the key the
static graph wrapper captures under) and per layer. In CPU emulation nothing is
captured (``ascend_ops.device.is_capturing()`` is False), so nothing is recorded
and the update is a no-op: graph replay is eager there.

:func:`update_graph_params` is the hook the graph layer runs before each FULL replay
(``vllm_ascend_graph.params.register_param_update_hook``); the platform registers it
by the qualified name published as ``graph_param_update_hook`` in :data:`vllm_ascend_attention.LAYER`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from ascend_ops import device

#: launch(metadata): issue one layer's attention call with the lengths in ``metadata``
Launch = Callable[[Any], None]


@dataclasses.dataclass
class CapturedCall:
    """One layer's captured attention call.

    Attributes:
        handle: the task-group handle from ``graph_task_group_end``.
        event: the ``ExternalEvent`` the captured graph waits on before the call.
        launch: re-issues the call (same tensors, ``.out`` into the captured outputs)
            with the lengths of a given per-layer metadata.
    """

    handle: Any
    event: Any
    launch: Launch


_lock = threading.Lock()
_captured: dict[Any, dict[str, CapturedCall]] = {}
_update_stream: Any = None
_workspaces: dict[Any, Any] = {}


def capture_key() -> Any:
    """The batch descriptor of the forward being captured (vLLM forward context)."""
    from vllm.forward_context import get_forward_context, is_forward_context_available

    if not is_forward_context_available():
        return None
    return get_forward_context().batch_descriptor


def capture_call(layer_name: str, launch: Launch, metadata: Any) -> None:
    """Issue ``launch(metadata)`` as its own graph task group and remember it.

    Call only while ``ascend_ops.device.is_capturing()``. The ordering follows
    vllm-ascend: wait on (then reset) a fresh external event, then the task group.
    """
    stream = device.current_stream()
    event = device.ExternalEvent()
    event.wait(stream)
    event.reset(stream)
    device.graph_task_group_begin(stream)
    launch(metadata)
    handle = device.graph_task_group_end(stream)
    with _lock:
        _captured.setdefault(capture_key(), {})[layer_name] = CapturedCall(handle, event, launch)


def captured(batch_descriptor: Any) -> dict[str, CapturedCall]:
    """Layer name -> :class:`CapturedCall` recorded under ``batch_descriptor`` (copy)."""
    with _lock:
        return dict(_captured.get(batch_descriptor, {}))


def clear() -> None:
    """Forget every captured call and workspace (after the graphs are dropped)."""
    with _lock:
        _captured.clear()
        _workspaces.clear()


def _stream():
    global _update_stream
    if _update_stream is None:
        _update_stream = device.Stream()
    return _update_stream


def update_graph_params(params: Any) -> int:
    """Re-issue each captured layer's call with this step's lengths (before a FULL replay).

    Args:
        params: the graph layer's ``ReplayParams``: ``batch_descriptor`` picks the
            captured graph, ``attn_metadata`` (layer name -> this backend's metadata)
            gives each layer's host lengths.

    Returns:
        The number of calls updated (0 in emulation, or for a graph without attention).

    Raises:
        RuntimeError: a captured layer has no metadata this step (the replay would run
            with stale lengths).
    """
    calls = captured(getattr(params, "batch_descriptor", None))
    if not calls:
        return 0
    metadata = getattr(params, "attn_metadata", None)
    if not isinstance(metadata, dict):
        raise RuntimeError(
            "FULL-graph parameter update needs the step's per-layer attention metadata "
            f"(a dict), got {type(metadata).__name__}; micro-batching is not supported here"
        )
    # The previous FULL replay may still run on the device (async scheduling keeps the host a
    # step ahead): an update issued now on the update stream could reach the graph's task
    # before that replay does, and its event record would merge with the one that replay has
    # not consumed yet, so a later wait never returns. vllm-ascend synchronizes the current
    # stream before each FULL replay for this (vllm_ascend/compilation/acl_graph.py, commits
    # 1cdf9ffa73 and e7a13beedb); docs/simulated-npu.md shows the race under the adversarial
    # schedule.
    device.current_stream().synchronize()
    stream = _stream()
    with device.stream(stream):
        for name, call in calls.items():
            if name not in metadata:
                raise RuntimeError(
                    f"layer {name!r} was captured with attention but has no metadata this step"
                )
            device.graph_task_update_begin(stream, call.handle)
            call.launch(metadata[name])
            device.graph_task_update_end(stream)
            call.event.record(stream)
    return len(calls)



def shared_workspace(make: Callable[[], Any]) -> Any:
    """One FIA workspace per captured graph, shared by its layers (as vllm-ascend keeps one
    per captured size): ``make()`` on the first layer of a capture, reused after."""
    key = capture_key()
    with _lock:
        if key in _workspaces:
            return _workspaces[key]
    workspace = make()
    with _lock:
        return _workspaces.setdefault(key, workspace)
