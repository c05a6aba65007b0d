# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Handle -> prepacked-weight registry shared by the native CPU packs (``native.linear``,
``native.moe``): callers hold an integer handle, the packed copy lives here, thread-safe."""

from __future__ import annotations

import itertools
import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class PackRegistry(Generic[T]):
    """Packs by handle (>= 0). ``get`` is a plain dict read (hot path, no lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._packs: dict[int, T] = {}
        self._ids = itertools.count()

    def add(self, entry: T) -> int:
        """Store ``entry``; return its new handle."""
        with self._lock:
            handle = next(self._ids)
            self._packs[handle] = entry
        return handle

    def get(self, handle: int) -> T | None:
        return self._packs.get(handle) if handle >= 0 else None

    def replace(self, handle: int, entry: T) -> None:
        """Put a rebuilt ``entry`` under an existing ``handle``."""
        with self._lock:
            self._packs[handle] = entry

    def release(self, handle: int) -> None:
        """Drop a pack (no-op for -1 or an unknown handle)."""
        with self._lock:
            self._packs.pop(handle, None)

    def count(self) -> int:
        with self._lock:
            return len(self._packs)
