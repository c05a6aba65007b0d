# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend sleep mode: a vLLM 0.32 ``SleepModeBackend`` over ``ascend_ops``' tagged memory.

vLLM dispatches ``LLM.sleep`` / ``wake_up`` / ``/sleep`` / ``/wake_up`` through the engine core
and executor to ``Worker.sleep`` / ``wake_up`` / ``discard``
(``vllm/v1/worker/gpu_worker.py``), which call the backend chosen by
``ModelConfig.sleep_mode_backend`` from ``SleepModeBackendFactory``
(``vllm/device_allocator/sleep_mode_backend.py``). We register ``"ascend"`` there and make it the
default on our platform (``select_default``). The worker registers the model's tensors under
``"weights"`` and the KV cache under ``"kv_cache"`` in ``ascend_ops.device.tagged_memory``
(``NPUWorker._maybe_get_memory_pool_context``).

Levels (vLLM's documented semantics, ``vllm/entrypoints/llm.py``, ``LLM.sleep``):

* 1: weights copied to host memory, KV cache freed; ``resume`` copies the weights back.
* 2: weights and KV cache freed; after ``resume(["weights"])`` the weights are zeros until
  reloaded (``collective_rpc("reload_weights")`` or the model's ``load_weights``).

How the level reaches the backend depends on the vLLM version (``SleepModeBackend.suspend``):

* vLLM 0.33: ``suspend(level)``; for level 2 the worker keeps host copies of the
  ``--sleep-preserve-parameter-names`` parameters and of the model's buffers itself
  (``Worker._save_sleep_parameters``, vllm/v1/worker/gpu_worker.py).
* vLLM 0.34: ``suspend(discardable)``, the storage addresses of the parameters a weight update
  rewrites (``Worker._discardable_parameters``: every parameter at level 2 except the preserved
  ones, nothing at level 1). Those storages are freed without a copy; every other weight storage
  (preserved parameters, buffers) goes to host memory and comes back with ``resume``.

Either way the KV cache is freed. The backend takes both forms (an ``int`` is a level), so
callers written against either contract work on either version.

The KV cache comes back zeroed (its old contents are gone; vLLM's engine core clears the prefix
cache when it sleeps). A restored storage may sit at a new device address; captured ACL graphs
hold addresses, so they are then dropped (``clear_all_graphs`` of the ``static_graph_wrapper``
class the graph layer publishes) and the worker captures them again once every tag is
resident (``NPUWorker.wake_up``).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import Any

from vllm.device_allocator.sleep_mode_backend import SleepModeBackend, SleepModeBackendFactory
from vllm.logger import init_logger

logger = init_logger("vllm.ascend.sleep_mode")

#: the name under which the backend is registered with vLLM's factory
BACKEND_NAME = "ascend"
#: the memory tags the backend manages (vLLM's ``DEFERRABLE_TAGS``)
TAGS = ("weights", "kv_cache")
LEVELS = (1, 2)


def check_level(level: Any) -> int:
    """Validate a sleep level (1 or 2). Raises ValueError naming the levels. vLLM 0.34's
    ``Worker.sleep`` no longer hands the level to the backend and treats any level but 2 as 1,
    so the worker checks it too (``NPUWorker.sleep``)."""
    if isinstance(level, bool) or level not in LEVELS:
        raise ValueError(
            f"sleep level must be 1 (weights to host, KV cache freed) or 2 (both freed), "
            f"got {level!r}"
        )
    return int(level)

def register() -> None:
    """Register ``"ascend"`` with ``SleepModeBackendFactory`` (idempotent; every process)."""
    if BACKEND_NAME not in SleepModeBackendFactory._registry:
        SleepModeBackendFactory.register_backend(BACKEND_NAME, __name__, "AscendSleepModeBackend")


def select_default(model_config: Any) -> None:
    """Make ``"ascend"`` the backend when the configuration left vLLM's default (``"cumem"``,
    CUDA's allocator, which does not exist here); an explicit other choice is kept."""
    register()
    if model_config is not None and getattr(model_config, "sleep_mode_backend", None) == "cumem":
        model_config.sleep_mode_backend = BACKEND_NAME


def check_tags(tags: Any, what: str) -> tuple[str, ...]:
    """Validate ``tags`` (None = all). Raises ValueError naming the unknown tags."""
    if tags is None:
        return TAGS
    if isinstance(tags, str):
        tags = (tags,)
    unknown = [t for t in tags if t not in TAGS]
    if unknown:
        raise ValueError(f"{what}: unknown memory tag(s) {unknown}; use a subset of {list(TAGS)}")
    return tuple(tags)


class AscendSleepModeBackend(SleepModeBackend):
    _state: str  # RUNNING, SUSPENDED or RESUMING; vLLM's SleepModeBackend.__init__ sets it
    """Sleep-mode backend for Ascend NPUs, the simulated NPU and CPU emulation.

    ``suspend(discardable)`` (vLLM 0.34) or ``suspend(level)`` (vLLM 0.33), see the module
    docstring; RuntimeError when already suspended. ``resume(tags)``: ``None`` or a subset of
    ``("weights", "kv_cache")``. ``discard(tags)``: free tagged memory without keeping
    contents. ``state()``: ``"RUNNING"`` while every tag is resident, else ``"SUSPENDED"``.
    ``last_bytes``: bytes moved / freed by the last call, per direction (for benchmarks and
    logs).
    """

    def __init__(self) -> None:
        super().__init__()
        self.last_bytes: dict[str, int] = {}
        #: set when restored tensors moved and the captured graphs were dropped; the worker
        #: captures them again once everything is resident (vLLM refuses capture mid-serving)
        self.graphs_dropped = False

    @staticmethod
    def _pool():
        from ascend_ops.device.tagged_memory import default_pool

        return default_pool()

    def suspend(self, discardable: Collection[int] | int = ()) -> None:
        """Free the device memory of the weights and the KV cache.

        ``discardable``: vLLM 0.34's contract, storage addresses
        (``untyped_storage().data_ptr()``) of weights to free without a copy; every other
        weight storage is copied to host memory. An ``int`` is vLLM 0.33's ``level``: 1 = no
        weight discardable, 2 = every weight discardable. Raises ValueError for a level other
        than 1 or 2, RuntimeError when already suspended.
        """
        if isinstance(discardable, int):
            drop_all, drop = check_level(discardable) == 2, frozenset[int]()
        else:
            drop_all, drop = False, frozenset(discardable)
        pool = self._pool()
        if self._state != "RUNNING":
            raise RuntimeError("sleep: the engine is already asleep; call wake_up() first")
        registered = [t for t in TAGS if t in pool.tags()]
        to_host = freed = 0
        for tag in registered:
            if tag == "weights" and not drop_all:
                resident = pool.nbytes(tag)
                moved = pool.offload(tag, drop=drop)
                to_host += moved
                freed += resident - moved
            else:
                freed += pool.discard(tag)
        self.last_bytes = {"to_host": to_host, "freed": freed + to_host}
        self._state = "SUSPENDED"
        logger.info("Sleep: %.3f GiB of weights to host, %.3f GiB of device memory freed.",
                    to_host / (1 << 30), (freed + to_host) / (1 << 30))

    def resume(self, tags: list[str] | None = None) -> None:
        wanted = check_tags(tags, "wake_up")
        pool = self._pool()
        self._state = "RESUMING"
        before = pool.bytes_to_device
        moved = False
        try:
            for tag in wanted:
                if tag in pool.tags():
                    moved = pool.restore(tag) or moved
        finally:
            self._state = self._current_state()
        self.last_bytes = {"to_device": pool.bytes_to_device - before}
        if moved and _graphs_hold_addresses():
            self.graphs_dropped = _drop_captured_graphs() or self.graphs_dropped

    def discard(self, tags: tuple[str, ...]) -> None:
        pool = self._pool()
        freed = 0
        for tag in check_tags(tags, "discard"):
            if tag in pool.tags():
                freed += pool.discard(tag)
        self.last_bytes = {"freed": freed}
        self._state = self._current_state()

    def _current_state(self) -> str:
        pool = self._pool()
        asleep = any(pool.state(t) != "resident" for t in TAGS if t in pool.tags())
        return "SUSPENDED" if asleep else "RUNNING"

    @classmethod
    def preserves_communicators(cls) -> bool:
        # HCCL communicators are not touched: their buffers are outside the tagged groups
        return True

    @classmethod
    def preserves_compiled_artifacts(cls) -> bool:
        return True


def _graphs_hold_addresses() -> bool:
    """NPU and simulated NPU capture real device graphs; CPU emulation's graphs re-run the
    captured callable eagerly and hold no addresses (docs/architecture.md, "Modes")."""
    from ascend_ops import device

    return device.kind() == "npu"


def _drop_captured_graphs() -> bool:
    """Restored tensors moved: forget captured ACL graphs. Returns True when there were any."""
    from vllm_ascend_platform.startup import contract

    name = contract.provided("static_graph_wrapper")  # the graph layer's published wrapper
    if name is None:  # graph layer absent: no graphs were captured
        return False
    if name.rpartition(".")[0] not in sys.modules:
        # never imported (an eager engine): nothing was captured, and nothing to import now
        return False
    wrapper = contract.resolve(name)
    if not any(w.entries for w in list(wrapper._all_instances)):
        return False
    wrapper.clear_all_graphs()
    logger.info("Device tensors moved on wake-up: captured ACL graphs dropped (the worker "
                "captures them again when every tag is resident).")
    return True
