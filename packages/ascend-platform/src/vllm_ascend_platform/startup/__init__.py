# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up: the plugin's entry decision, the version and layer checks, the layer contract,
AscendConfig and the defaults applied to vLLM's config.

The package imports nothing: import the module you need (docs/architecture.md, "Rooms").
"""
