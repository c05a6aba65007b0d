# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Environment variables read by the Ascend platform layer.

Every variable is read lazily (at call time) so tests and subprocesses can set
them after import. Parsing errors raise ``ValueError`` naming the variable and
an accepted example, so a bad setting fails at start-up, not mid-request.
"""

from __future__ import annotations

import os
import re

import psutil

GiB = 1 << 30

#: name -> one-line description (also used to keep vLLM's unknown-env check quiet)
ENVIRONMENT_VARIABLES: dict[str, str] = {
    "VLLM_ASCEND_EMULATE": "1 runs the whole plugin on CPU (CPU emulation mode)",
    "VLLM_ASCEND_EMULATE_DEVICE_MEMORY": (
        "emulated (or simulated-NPU) device memory, e.g. 8GiB or 512MiB (default 8GiB, at most "
        "half the host RAM)"
    ),
    "VLLM_ASCEND_SKIP_VERSION_CHECK": (
        "1 (or true/yes/on) lets an unsupported vLLM version run with a warning"
    ),
    "VLLM_ASCEND_GRAPH_PARAM_UPDATE": (
        "1 (default) updates attention's host lengths in captured FULL graphs before each replay; "
        "0 disables it (negative control)"
    ),
    "VLLM_ASCEND_SIMULATE_NPU": (
        "1 runs the plugin's NPU code path on CPU over the simulated torch_npu "
        "(ascend_ops.simulator; simulated-NPU mode)"
    ),
    "VLLM_ASCEND_GRAPH_DUMP": (
        "a file path: the graph layer's pass manager appends each FX graph before its passes "
        "(debugging)"
    ),
    "VLLM_ASCEND_CACHE": "root of the vllm-ascend cache (default ~/.cache/vllm-ascend; demo weights)",
    "VLLM_ASCEND_VENV": "tooling: the virtual environment nox uses (default .venv in the checkout)",
    "VLLM_ASCEND_WHEELHOUSE": "tooling: the wheel folder the release tests install from",
    "VLLM_ASCEND_E2E_JOBS": "tooling: how many e2e parts nox runs at once (default 2; 1 = in turn)",
}

_DEFAULT_EMULATED_MEMORY = 8 * GiB
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": GiB, "gb": GiB, "gib": GiB}


def flag(name: str, enables: str) -> bool:
    """The one boolean rule for our variables: 1/true/yes/on and 0/false/no/off/unset (any case).

    Raises:
        ValueError: any other value, naming the variable and what it enables.
    """
    value = os.environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(
        f"{name}={value!r} is not a boolean; set it to 1 to enable {enables} "
        "or 0 / unset to disable it."
    )


def emulate() -> bool:
    """True when ``VLLM_ASCEND_EMULATE`` asks for CPU emulation mode."""
    return flag("VLLM_ASCEND_EMULATE", "CPU emulation")


def simulate_npu() -> bool:
    """True when ``VLLM_ASCEND_SIMULATE_NPU`` asks for simulated-NPU mode (docs/simulated-npu.md)."""
    return flag("VLLM_ASCEND_SIMULATE_NPU", "simulated-NPU mode")


def requested_mode() -> str | None:
    """The mode the variables ask for: ``"emulation"``, ``"simulated-npu"`` or None (NPU or
    inactive, decided by whether torch_npu is installed).

    Raises:
        ValueError: a malformed flag, or both ``VLLM_ASCEND_EMULATE=1`` and
            ``VLLM_ASCEND_SIMULATE_NPU=1`` (they select different op branches; pick one).
    """
    emulated, simulated = emulate(), simulate_npu()
    if emulated and simulated:
        raise ValueError(
            "VLLM_ASCEND_EMULATE=1 and VLLM_ASCEND_SIMULATE_NPU=1 are both set, but they are "
            "different modes (CPU kernels vs the NPU code path over the simulated torch_npu); "
            "unset one of them."
        )
    if emulated:
        return "emulation"
    return "simulated-npu" if simulated else None


def host_device() -> bool:
    """True in the two modes whose device tensors live on the host (emulation, simulated NPU)."""
    return requested_mode() is not None


def parse_bytes(text: str, name: str) -> int:
    """Parse a size such as ``8GiB``, ``512MiB`` or ``1073741824`` into bytes.

    Raises:
        ValueError: naming ``name`` when the text is not a positive size.
    """
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"{name}={text!r} is not a size; use e.g. 8GiB, 512MiB or a byte count.")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise ValueError(f"{name}={text!r} must be positive.")
    return value


def emulated_device_memory() -> int:
    """Emulated device memory in bytes (``VLLM_ASCEND_EMULATE_DEVICE_MEMORY``).

    Defaults to 8 GiB; never more than half of the host's physical RAM, because the
    emulated device lives in host memory next to the engine itself.

    Raises:
        ValueError: when the variable is malformed or exceeds half the host RAM.
    """
    host_half = psutil.virtual_memory().total // 2
    raw = os.environ.get("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "").strip()
    if not raw:
        return min(_DEFAULT_EMULATED_MEMORY, host_half)
    value = parse_bytes(raw, "VLLM_ASCEND_EMULATE_DEVICE_MEMORY")
    if value > host_half:
        raise ValueError(
            f"VLLM_ASCEND_EMULATE_DEVICE_MEMORY={raw} exceeds half of this host's RAM "
            f"({host_half / GiB:.1f} GiB); lower it."
        )
    return value
