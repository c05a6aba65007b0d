# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Run a few test commands at the same time, each into its own log, and report them in turn.

The end-to-end suite spends much of its wall time in one-core phases (importing vLLM, loading
weights, compiling graphs, waiting on child processes), so two pytest processes over disjoint
test files finish sooner together than one after the other on a 2-core box. Each command's
output goes to its own log file (interleaved ``-v`` lines would be unreadable); a log is printed
whole, with a header, as soon as its command ends, so CI's output still shows every test and
the ``--durations`` table of each part.

The files are dealt into parts by their recorded durations (``tests/e2e/durations.json``,
refreshed from a run's JUnit reports with ``python scripts/parallel_parts.py --update``), so the
lanes end close together; the parts start longest first.

Used by ``noxfile.py`` (session ``e2e``); importable without nox.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_parts(commands: Sequence[Sequence[str]], log_dir: Path, env: Mapping[str, str],
              jobs: int, out=sys.stdout) -> list[int]:
    """Run ``commands`` with at most ``jobs`` at once; return their exit codes in order.

    Args:
        commands: argv lists, one per part.
        log_dir: folder for ``part-<n>.log`` (created; old logs replaced).
        env: the full environment of every command.
        jobs: how many commands run at once (>= 1; 1 runs them one after another).
        out: where each finished part's log is copied.

    Raises:
        ValueError: ``jobs`` < 1 or no commands.
    """
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: run at least one part at a time")
    if not commands:
        raise ValueError("no commands to run")
    log_dir.mkdir(parents=True, exist_ok=True)
    codes: list[int | None] = [None] * len(commands)
    todo = list(range(len(commands)))
    running: dict[int, tuple[subprocess.Popen, Path, float]] = {}
    while todo or running:
        while todo and len(running) < jobs:
            n = todo.pop(0)
            log = log_dir / f"part-{n + 1}.log"
            with open(log, "wb") as fh:
                proc = subprocess.Popen(list(commands[n]), stdout=fh, stderr=subprocess.STDOUT,
                                        env=dict(env), start_new_session=False)
            running[n] = (proc, log, time.monotonic())
            print(f"[parts] part {n + 1}/{len(commands)} started (pid {proc.pid}, log {log})",
                  file=out, flush=True)
        for n, (proc, log, start) in list(running.items()):
            rc = proc.poll()
            if rc is None:
                continue
            del running[n]
            codes[n] = rc
            print(f"\n[parts] ===== part {n + 1}/{len(commands)}: exit {rc} after "
                  f"{time.monotonic() - start:.0f} s; its log follows =====", file=out, flush=True)
            out.write(log.read_text(errors="replace"))
            out.flush()
        time.sleep(1.0)
    return [int(c) for c in codes if c is not None]


def jobs_from_env(name: str, default: int) -> int:
    """An integer >= 1 from environment variable ``name`` (``default`` when unset).

    Raises:
        ValueError: the value is not a whole number >= 1 (the message names the variable).
    """
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: give a whole number of parallel parts (>= 1)") from None
    if value < 1:
        raise ValueError(f"{name}={raw!r}: give a whole number of parallel parts (>= 1)")
    return value


def split_by_duration(files: Sequence[str], durations: Mapping[str, float], parts: int,
                      together: Sequence[str] = ()) -> list[list[str]]:
    """Deal ``files`` into at most ``parts`` lists of about equal total duration.

    Longest first, each to the part with the least time so far (the LPT rule); the files named
    in ``together`` (file names) count as one unit and land in one part (they share an engine
    that a part builds once). A file missing from ``durations`` (keyed by file name) counts as
    the median of the known ones. Parts are returned longest first, each in file-name order;
    empty parts are dropped.

    Raises:
        ValueError: ``parts`` < 1.
    """
    if parts < 1:
        raise ValueError(f"parts={parts}: split into at least one part")
    known = sorted(durations.values())
    default = known[len(known) // 2] if known else 1.0
    grouped = [f for f in files if Path(f).name in set(together)]
    units = [[f] for f in files if f not in grouped] + ([grouped] if grouped else [])

    def cost(unit: list[str]) -> float:
        return sum(float(durations.get(Path(f).name, default)) for f in unit)

    bins: list[tuple[float, list[str]]] = [(0.0, []) for _ in range(parts)]
    for unit in sorted(units, key=lambda u: (-cost(u), u)):
        i = min(range(parts), key=lambda i: (bins[i][0], i))
        bins[i] = (bins[i][0] + cost(unit), bins[i][1] + unit)
    bins.sort(key=lambda b: -b[0])
    return [sorted(b[1]) for b in bins if b[1]]


def durations_from_junit(reports: Sequence[Path]) -> dict[str, float]:
    """Seconds per test file name, summed over the ``testcase`` times of JUnit XML ``reports``
    (pytest's ``--junitxml``; a test's time includes its fixtures' setup and teardown)."""
    out: dict[str, float] = {}
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")
            name = next((m for m in module if m.startswith("test_")), None)
            if name is None:
                continue
            key = f"{name}.py"
            out[key] = out.get(key, 0.0) + float(case.get("time", 0.0))
    return {k: round(v, 1) for k, v in sorted(out.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description="Refresh the e2e parts' recorded durations.")
    parser.add_argument("--update", action="store_true",
                        help="write tests/e2e/durations.json from the parts' JUnit reports")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    folders = [root / ".nox" / "e2e-parts", root / ".nox" / "npu-coverage-parts"]
    reports = sorted(r for folder in folders for r in folder.glob("part-*.xml"))
    if not reports:
        print("no .nox/{e2e,npu-coverage}-parts/part-*.xml: run `nox -s e2e npu_coverage` first",
              file=sys.stderr)
        return 1
    found = durations_from_junit(reports)
    if args.update:
        (root / "tests" / "e2e" / "durations.json").write_text(json.dumps(found, indent=1) + "\n")
    for name, secs in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"{secs:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
