# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU backend: each op family on the compiled ``ascend_ops._C`` kernels or vectorised
torch (one module per family), plus the host memory and registry of prepacked CPU weights."""
