# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Process-wide set-up for CPU emulation mode.

CPU-only torch raises "Cannot access accelerator device when none is available"
from ``torch.accelerator.synchronize()``, ``empty_cache()`` and
``empty_host_cache()`` and ``get_memory_info()``, which vLLM calls unconditionally from model loaders, the
runner and ``cleanup_dist_env_and_memory`` (engine shutdown). In emulation the
"device" is the host, where every op has completed when it returns, so these
calls have nothing to do (memory info reports the emulated device budget). This replaces them with
no-ops in emulation only,
when the platform module is imported (every vLLM process that resolves our
platform); vLLM's own CPU runner installs the same no-ops. NPU mode never calls
this.
"""

from __future__ import annotations

from typing import Any

import torch

_installed = False


# patch: emulation-host-accelerator (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def install_host_accelerator() -> None:
    """Make ``torch.accelerator`` sync/cache calls no-ops (idempotent)."""
    global _installed
    if _installed:
        return

    # Distinct functions: Dynamo keys its handling on the ``synchronize`` object.
    def synchronize(*args: Any, **kwargs: Any) -> None:
        return None

    def empty_cache(*args: Any, **kwargs: Any) -> None:
        return None

    def empty_host_cache(*args: Any, **kwargs: Any) -> None:
        return None

    def get_memory_info(*args: Any, **kwargs: Any) -> tuple[int, int]:
        from ascend_ops import device

        return device.mem_get_info()

    torch.accelerator.synchronize = synchronize
    torch.accelerator.get_memory_info = get_memory_info
    torch.accelerator.empty_cache = empty_cache
    torch.accelerator.empty_host_cache = empty_host_cache
    _installed = True
