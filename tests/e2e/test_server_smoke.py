# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""scripts/npu_smoke.sh runs end to end in emulation and prints its report format
(README.md, "The two commands"): NPU tests reported deselected with the reason, serve-and-ask passes."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ["date", "commit", "host", "mode", "soc", "devices", "versions", "doctor", "npu tests",
          "serve-ask", "result"]


@pytest.fixture(scope="module")
def report():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_ASCEND", "VLLM_PLUGINS"))}
    env["VLLM_ASCEND_EMULATE"] = "1"
    env["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = "4GiB"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "npu_smoke.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    return proc.returncode, proc.stdout, proc.stderr


def _field(text: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}:\s+(.*)$", text, re.MULTILINE)
    assert match, f"report has no {name!r} line:\n{text}"
    return match.group(1)


def test_report_frame_and_fields_in_order(report):
    code, out, err = report
    assert code == 0, out + err[-3000:]
    lines = out.splitlines()
    assert lines[0] == "===== vllm-ascend NPU smoke report ====="
    assert lines[-1] == "===== end of report ====="
    positions = [next(i for i, ln in enumerate(lines) if ln.startswith(f"{f}:")) for f in FIELDS]
    assert positions == sorted(positions)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", _field(out, "date"))
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip()
    assert _field(out, "commit").split()[0] == git


def test_emulation_reports_npu_tests_deselected_with_reason(report):
    _, out, _ = report
    assert _field(out, "mode") == "emulation"
    tests = _field(out, "npu tests")
    match = re.fullmatch(r"0 selected, (\d+) deselected \(reason: no Ascend NPU \(mode=emulation\)"
                         r": npu-marked tests need torch_npu and a visible device\)", tests)
    assert match and int(match.group(1)) >= 2  # at least test_front_door_npu.py's two tests
    assert "  tests/e2e: " in out and " deselected" in out


def test_serve_and_ask_passes_with_an_answer(report):
    _, out, _ = report
    serve = _field(out, "serve-ask")
    assert re.match(r'PASS in \d+s: Q: "What is the capital of France\?" A: ".+"', serve)
    assert "Paris" in serve  # SmolLM2-135M-Instruct answers this one correctly (greedy)
    assert _field(out, "result") == "PASS"
    assert "--- doctor ---" in out and "vllm-ascend doctor" in out
