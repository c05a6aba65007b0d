# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Run a few test commands at the same time, each into its own log, and report them in turn.

The end-to-end suite spends much of its wall time in one-core phases (importing vLLM, loading
weights, compiling graphs, waiting on child processes), so two pytest processes over disjoint
test files finish sooner together than one after the other on a 2-core box. Each command's
output goes to its own log file (interleaved ``-v`` lines would be unreadable); a log is printed
whole, with a header, as soon as its command ends, so CI's output still shows every test and
the ``--durations`` table of each part.

Used by ``noxfile.py`` (session ``e2e``); importable without nox.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
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
