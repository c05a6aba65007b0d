# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU backend: each op family mapped onto the torch_npu operators whose semantics it follows
(one module per family; ``layers`` holds the torch_npu loader and the per-layer ops)."""
