# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the op families, one module per family (``layers`` holds the shared
tensor checks); errors name the argument and what to change."""
