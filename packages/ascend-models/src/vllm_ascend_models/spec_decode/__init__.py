# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Speculative decoding on Ascend: the rejection sampler over ``ascend_ops`` (docs/spec-decode.md)."""
