# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Options: which vLLM options, quantization methods, LoRA and speculative-decoding settings the
platform serves, and the refusals that name the rest.

The package imports nothing: import the module you need (docs/architecture.md, "Rooms").
"""
