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


def test_split_by_duration_balances_parts_and_covers_every_file():
    durations = {"test_a.py": 900.0, "test_b.py": 500.0, "test_c.py": 400.0, "test_d.py": 300.0,
                 "test_e.py": 100.0}
    files = [f"/r/tests/e2e/{n}" for n in [*durations, "test_new.py"]]  # test_new: unknown
    parts = parallel_parts.split_by_duration(files, durations, 2)
    assert sorted(f for p in parts for f in p) == sorted(files)
    totals = [sum(durations.get(f.rsplit("/", 1)[1], 400.0) for f in p) for p in parts]
    assert totals == sorted(totals, reverse=True)  # longest part first
    assert totals == [1300.0, 1300.0]  # LPT: a+e+d... each lane 1300 s (median 400 for test_new)
    assert all(p == sorted(p) for p in parts)


def test_split_by_duration_drops_empty_parts_and_refuses_zero():
    assert parallel_parts.split_by_duration(["x/test_a.py"], {}, 3) == [["x/test_a.py"]]
    with pytest.raises(ValueError, match="at least one part"):
        parallel_parts.split_by_duration(["x/test_a.py"], {}, 0)


def test_durations_from_junit_sums_per_file(tmp_path):
    report = tmp_path / "part-1.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.e2e.test_a" name="test_one" time="10.25"/>'
        '<testcase classname="tests.e2e.test_a" name="test_two[x]" time="2.5"/>'
        '<testcase classname="test_b.TestGroup" name="test_three" time="4"/>'
        '</testsuite></testsuites>')
    assert parallel_parts.durations_from_junit([report]) == {"test_a.py": 12.8, "test_b.py": 4.0}  # 12.75 rounded


def test_split_by_duration_keeps_together_files_in_one_part():
    durations = {"test_a.py": 300.0, "test_b.py": 300.0, "test_c.py": 300.0, "test_d.py": 300.0}
    files = [f"t/{n}" for n in durations]
    parts = parallel_parts.split_by_duration(files, durations, 4, together=["test_a.py", "test_d.py"])
    assert ["t/test_a.py", "t/test_d.py"] in parts
    assert sorted(f for p in parts for f in p) == sorted(files) and len(parts) == 3
