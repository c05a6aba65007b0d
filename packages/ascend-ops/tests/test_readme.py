# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The README's plain-PyTorch example runs as written (skipped where the README is not shipped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(capsys):
    if not README.is_file():
        pytest.skip("README.md not present next to the tests")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README has no python example"
    exec(compile(blocks[0], str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "torch.Size([5, 8, 64])" in out and "fused_infer_attention" in out
