# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The patch registry: every runtime change to vLLM, declared as data, applied by name.

The package imports nothing: import the module you need (docs/architecture.md, "Rooms").
"""
