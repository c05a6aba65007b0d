# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A KV budget that does not fit fails before serving and says what to change.

Each case starts a real engine in a subprocess (so the failure's exit code and
message are what a user sees) with a small emulated device memory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    if __name__ == "__main__":
        from vllm import LLM
        LLM(model=sys.argv[1], dtype="float32", max_model_len=int(sys.argv[2]),
            max_num_batched_tokens=256, max_num_seqs=4, enforce_eager=True,
            gpu_memory_utilization=0.9)
        print("ENGINE STARTED")
    """
)
WEIGHTS_GIB = 0.503  # SmolLM2-135M in float32: 134.5 M parameters x 4 bytes
KV_BYTES_PER_TOKEN = 30 * 3 * 64 * 2 * 4  # layers x kv heads x head dim x (K, V) x fp32


def _start(model_path: str, device_memory: str, max_model_len: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, VLLM_ASCEND_EMULATE_DEVICE_MEMORY=device_memory)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, model_path, str(max_model_len)],
        env=env, capture_output=True, text=True, timeout=600,
    )


def test_weights_barely_fit_device(model_path):
    # (a) device memory about 1.05x the weights: with gpu_memory_utilization 0.9 nothing fits
    proc = _start(model_path, f"{int(WEIGHTS_GIB * 1.05 * 1024)}MiB", 1024)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "ENGINE STARTED" not in out
    assert re.search(r"weights 0\.50\d GiB", out), out[-3000:]
    assert "shortfall" in out and "VLLM_ASCEND_EMULATE_DEVICE_MEMORY" in out
    assert "no max_model_len fits" in out
    assert "num_gpu_blocks" not in out.split("Not enough device memory")[0][-200:]


def test_one_sequence_does_not_fit(model_path):
    # (b) weights fit, one 8192-token sequence of KV (8192 x 46,080 B = 360 MiB) does not
    proc = _start(model_path, "900MiB", 8192)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "ENGINE STARTED" not in out
    match = re.search(r"largest max_model_len that fits is (\d+)", out)
    assert match, out[-3000:]
    fits = int(match.group(1))
    assert 0 < fits < 8192 and fits % 128 == 0
    # the named length must really fit: its KV is within the stated budget left for KV
    assert fits * KV_BYTES_PER_TOKEN < 900 * (1 << 20) * 0.9 - WEIGHTS_GIB * (1 << 30)
