# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The op layer stands alone: no vLLM in its own test environment (docs/architecture.md: it never imports vLLM)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(
    os.environ.get("ASCEND_OPS_STANDALONE") != "1",
    reason="only meaningful in the torch-only venv of the nox session (ASCEND_OPS_STANDALONE=1)",
)
def test_vllm_is_not_importable_here():
    assert importlib.util.find_spec("vllm") is None, "vllm is installed in the standalone env"
    import ascend_ops

    assert ascend_ops.native_available(), "the wheel built without its native kernels"


def test_import_does_not_pull_vllm():
    code = "import sys, ascend_ops; print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
