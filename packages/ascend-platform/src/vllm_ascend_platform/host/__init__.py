# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host stand-ins for the device in CPU emulation and simulated NPU: process set-up, threads, host
memory, kernel overrides and the kernel report.

The package imports nothing: import the module you need (docs/architecture.md, "Rooms").
"""
