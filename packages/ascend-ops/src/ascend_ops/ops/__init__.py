# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""torch.library custom ops (namespace ``ascend``) and their public Python wrappers."""
