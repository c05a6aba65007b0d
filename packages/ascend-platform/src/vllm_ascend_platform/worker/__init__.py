# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The device process: NPUWorker, its start-up, the model runner (Model Runner V2) with its host
sampler and graph managers, KV-cache memory, sleep mode and Ray support.

The package imports nothing: import the module you need (docs/architecture.md, "Rooms").
"""
