# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vllm-ascend platform layer: NPUPlatform, AscendConfig, worker, patch registry, doctor.

Importing this package stays light (no vLLM, no torch_npu): vLLM's plugin loader and
``vllm-ascend doctor`` import it before anything else is known to work.
"""

from __future__ import annotations

from vllm_ascend_platform.startup.plugin import AscendStartupError, platform_plugin, startup_check

__version__ = "0.2.0"
__all__ = ["AscendStartupError", "platform_plugin", "startup_check", "__version__"]
