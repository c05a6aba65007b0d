# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Benchmark command lines refuse bad arguments with a usage error, not a traceback.

``benchmarks/moe_bench.py --dtypes`` takes only the dtypes both MoE paths run (float32,
bfloat16: vLLM's ``cpu_fused_moe`` prepack has no float64 kernel), and
``benchmarks/comm_bench.py --sizes`` only byte counts with an optional K/M/G suffix. Both
are checked by argparse before any work, so each case costs one interpreter start.
``benchmarks/quant_bench.py``'s counts (``--batch``, ``--new-tokens``, ``--rounds``, ...) take
positive integers only, as do ``benchmarks/linear_bench.py``'s ``--rows``; its ``--dtypes`` are the
two it compares with vLLM's GEMM.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("script, args, named", [
    ("moe_bench.py", ["--dtypes", "float32,float64"], "float64"),
    ("moe_bench.py", ["--dtypes", "float33"], "float33"),
    ("comm_bench.py", ["--sizes", "1K,1X"], "1X"),
    ("comm_bench.py", ["--sizes", "0"], "0"),
    ("quant_bench.py", ["--ct", "--new-tokens", "0"], "0"),
    ("quant_bench.py", ["--batch", "x"], "x"),
    ("linear_bench.py", ["--dtypes", "float16"], "float16"),
    ("linear_bench.py", ["--rows", "1,0"], "0"),
])
def test_bad_argument_is_a_usage_error(script, args, named):
    proc = _run(script, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "error: argument" in last, last
    assert repr(named) in last or f" {named}" in last, last


@pytest.mark.parametrize("script, default", [("moe_bench.py", "float32,bfloat16"),
                                             ("comm_bench.py", "1K,64K,1M,8M"),
                                             ("quant_bench.py", "32"),
                                             ("linear_bench.py", "1,2,4,8,16,64")])
def test_help_shows_defaults(script, default):
    proc = _run(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert f"(default: {default})" in " ".join(proc.stdout.split()), proc.stdout  # unwrapped
