# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared test settings for vllm-ascend-comm (hypothesis CI profile, worker import path)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # spawned workers import _comm_worker by name

try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=10, deadline=None, derandomize=True)
    settings.register_profile("dev", max_examples=50, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis is a test extra
    pass
