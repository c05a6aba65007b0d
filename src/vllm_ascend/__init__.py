# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vllm-ascend meta-package: vLLM plugin entry points for the Ascend layers.

vLLM calls ``register`` (group ``vllm.platform_plugins``) to learn which platform
class to use and ``register_layers`` (group ``vllm.general_plugins``) in every
process. Both return quickly; the real work lives in the layer packages.
"""

from __future__ import annotations

__version__ = "0.2.0"


def register() -> str | None:
    """Platform plugin entry point: the NPUPlatform qualified name, or None."""
    from vllm_ascend_platform.startup.plugin import platform_plugin

    return platform_plugin()


def register_layers() -> None:
    """General plugin entry point: register every installed layer's hooks."""
    from vllm_ascend.layers import register_all_layers

    register_all_layers()
