# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Front door on real Ascend hardware (``npu`` marker; deselected on CPU, run by
scripts/npu_smoke.sh on machines with an NPU).

Expected values come from torch_npu itself (device count and name), not from our code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.npu,
    pytest.mark.skipif(importlib.util.find_spec("torch_npu") is None,
                       reason="needs torch_npu and an Ascend NPU"),
]


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_ASCEND", "VLLM_PLUGINS"))}
    return env


def test_platform_activates_in_npu_mode_without_emulation():
    code = ("from vllm.platforms import current_platform as p; "
            "print('PLATFORM', type(p).__module__, type(p).__name__)")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert "PLATFORM vllm_ascend_platform.platform NPUPlatform" in proc.stdout, proc.stderr
    assert "Ascend platform active (npu mode)" in proc.stdout + proc.stderr


def test_doctor_reports_the_devices_torch_npu_sees():
    import torch
    import torch_npu  # noqa: F401

    proc = subprocess.run([sys.executable, "-m", "vllm_ascend.cli", "doctor", "--json"],
                          env=_env(), capture_output=True, text=True, timeout=600)
    report = json.loads(proc.stdout)
    assert report["mode"] == "npu"
    assert len(report["devices"]) == torch.npu.device_count() > 0
    assert report["soc"] == torch.npu.get_device_name(0)
    assert report["versions"]["torch_npu"] is not None
