# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend subclasses of vLLM CustomOp layers, registered out of tree by :mod:`vllm_ascend_models`."""
