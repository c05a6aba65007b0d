# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The e2e session's parallel part runner (``scripts/parallel_parts.py``): every part runs, at
most ``jobs`` at once, each exit code is reported in order and each log is copied whole."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("parallel_parts", ROOT / "scripts" / "parallel_parts.py")
parallel_parts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parallel_parts)

# Each part appends "start <n>" / "end <n>" to one shared file around a 1.5 s sleep (long
# enough for a busy box to start the next part), so the file shows how many parts were inside
# their sleep at the same time.
_PART = ("import sys, time; n, path, rc = sys.argv[1], sys.argv[2], int(sys.argv[3]);"
         "open(path, 'a').write(f'start {n}\\n'); time.sleep(1.5);"
         "open(path, 'a').write(f'end {n}\\n'); print(f'output of part {n}'); sys.exit(rc)")


def _max_overlap(events: list[str]) -> int:
    now = peak = 0
    for line in events:
        now += 1 if line.startswith("start") else -1
        peak = max(peak, now)
    return peak


@pytest.mark.parametrize("jobs", [1, 2])
def test_parts_run_at_most_jobs_at_once_and_report_each(tmp_path, jobs):
    trace = tmp_path / "trace"
    rcs = [0, 3, 0]
    cmds = [[sys.executable, "-c", _PART, str(n), str(trace), str(rc)] for n, rc in enumerate(rcs)]
    out = io.StringIO()
    codes = parallel_parts.run_parts(cmds, tmp_path / "logs", dict(os.environ), jobs, out=out)
    assert codes == rcs
    events = trace.read_text().splitlines()
    assert sorted(events) == sorted([f"start {n}" for n in range(3)] + [f"end {n}" for n in range(3)])
    assert _max_overlap(events) == jobs
    text = out.getvalue()
    for n, rc in enumerate(rcs):
        assert f"output of part {n}" in text
        assert f"part {n + 1}/3: exit {rc}" in text


def test_bad_jobs_and_no_commands_are_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="at least one"):
        parallel_parts.run_parts([["true"]], tmp_path, {}, 0)
    with pytest.raises(ValueError, match="no commands"):
        parallel_parts.run_parts([], tmp_path, {}, 1)
    monkeypatch.setenv("VLLM_ASCEND_E2E_JOBS", "two")
    with pytest.raises(ValueError, match="VLLM_ASCEND_E2E_JOBS='two'"):
        parallel_parts.jobs_from_env("VLLM_ASCEND_E2E_JOBS", 2)
    monkeypatch.setenv("VLLM_ASCEND_E2E_JOBS", "3")
    assert parallel_parts.jobs_from_env("VLLM_ASCEND_E2E_JOBS", 2) == 3
    monkeypatch.delenv("VLLM_ASCEND_E2E_JOBS")
    assert parallel_parts.jobs_from_env("VLLM_ASCEND_E2E_JOBS", 2) == 2
