# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which of vLLM's compiled kernel libraries the platform loads (``host/vllm_kernels.py``).

vLLM built for the empty target (the one this line installs; its ``setup.py`` builds no
extension) has none: ``import_kernels`` loads nothing and logs no failed import. A vLLM with its
CPU build's kernels follows vLLM's CPU-platform rule on the host modes, since its ``vllm._C`` is
the AVX-512-BF16 library that vLLM's base rule would import on any CPU (SIGILL without those
instructions). Loading runs in a child process, which reads the ``vllm/_C*.so`` it mapped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_CHILD = r"""
from vllm_ascend_platform.platform import NPUPlatform
NPUPlatform.import_kernels()
libs = sorted({line.split("/")[-1].strip() for line in open("/proc/self/maps")
               if "/vllm/_C" in line})
print("LIBS", ",".join(libs))
"""


def _run(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VLLM_ASCEND_") and k != "VLLM_TARGET_DEVICE"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=300)


def test_empty_target_vllm_has_no_compiled_kernels():
    import vllm
    from vllm_ascend_platform.host import vllm_kernels

    package = Path(vllm.__file__).parent
    assert not list(package.glob("_C*.so")), "the installed vLLM is not an empty-target build"
    assert vllm_kernels.vllm_has_compiled_kernels() is False


def test_emulation_loads_no_vllm_kernel_and_logs_no_failed_import():
    out = _run({"VLLM_ASCEND_EMULATE": "1"})
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-2000:]}"
    libs = next(line for line in out.stdout.splitlines() if line.startswith("LIBS"))
    assert libs.strip() == "LIBS", libs
    assert "Failed to import from vllm._C" not in out.stderr, out.stderr[-2000:]


_RULE_CHILD = r"""
import sys
from vllm.platforms.cpu import CpuPlatform
from vllm.platforms.interface import Platform
from vllm_ascend_platform import platform
from vllm_ascend_platform.host import vllm_kernels

called = []
vllm_kernels.vllm_has_compiled_kernels = lambda: True  # as a vLLM built with its kernels
platform.ON_HOST = sys.argv[1] == "host"
CpuPlatform.import_kernels = classmethod(lambda cls: called.append("cpu"))
Platform.import_kernels = classmethod(lambda cls: called.append("base"))
platform.NPUPlatform.import_kernels()
print("RULES", ",".join(called))
"""


@pytest.mark.parametrize("mode, rule", [("host", "cpu"), ("npu", "base")])
def test_a_compiled_vllm_follows_vllms_rule_for_the_mode(mode, rule):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VLLM_ASCEND_") and k != "VLLM_TARGET_DEVICE"}
    out = subprocess.run([sys.executable, "-c", _RULE_CHILD, mode], capture_output=True, text=True,
                         env={**env, "VLLM_ASCEND_EMULATE": "1"}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"RULES {rule}" in out.stdout.splitlines(), out.stdout
