# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which of vLLM's own compiled kernel libraries a plugin process loads.

vLLM loads a platform's C++ kernels through ``Platform.import_kernels`` (called when
``vllm/_custom_ops.py`` is first imported); the base rule is ``import vllm._C``, with a logged
warning when it is missing (``vllm/platforms/interface.py``).

vLLM is built for the empty target here, on Ascend hosts and CPU boxes alike
(``VLLM_TARGET_DEVICE=empty``; README, "Which vLLM and torch"): its ``setup.py`` builds no
extension, so there is no ``vllm._C`` to load and every kernel the plugin runs is ``ascend_ops``'.
Nothing is imported then, and no failed import is logged.

A vLLM built with its compiled kernels keeps vLLM's rules. On the host modes (CPU emulation,
simulated NPU) that is vLLM's CPU-platform rule, which picks the build this CPU executes
(``CpuPlatform.import_kernels``, ``vllm/platforms/cpu.py``: AVX-512 with BF16 -> ``_C``, AVX-512 ->
``_C_AVX512``, otherwise ``_C_AVX2``): the CPU build's ``vllm._C`` is its AVX-512-BF16 library,
and importing it on a CPU without those instructions kills the process with SIGILL rather than
raising (docs/architecture.md, "Environment facts"). On an NPU it is the base rule.
"""

from __future__ import annotations

import importlib.util

#: vLLM's compiled kernel modules: the base rule's, then the CPU build's per-ISA variants
COMPILED_MODULES = ("vllm._C", "vllm._C_AVX512", "vllm._C_AVX2")


def vllm_has_compiled_kernels() -> bool:
    """True when the installed vLLM ships any compiled kernel module (False for an
    empty-target build)."""
    return any(importlib.util.find_spec(name) is not None for name in COMPILED_MODULES)


def import_host_kernels() -> None:
    """Load the CPU kernel build this CPU runs (vLLM's CPU platform rule, above).

    A missing build is logged by vLLM (ImportError), as on its own CPU platform; never raises."""
    from vllm.platforms.cpu import CpuPlatform

    CpuPlatform.import_kernels()
