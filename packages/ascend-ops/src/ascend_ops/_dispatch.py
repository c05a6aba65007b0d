# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Backend selection and call counting shared by every op.

Selection rule (ops contract): tensors on an ``npu`` device, or any tensor while the simulated NPU
(``ascend_ops.simulator.install()``, docs/simulated-npu.md) is active -> the torch_npu branch;
otherwise (CPU tensors) the compiled ``ascend_ops._C`` kernels. When ``_C`` did not import, a CPU
call raises :class:`NativeKernelsMissing` naming the import failure and the rebuild command: the
pure-torch reference kernels (3-20x slower, ``benchmarks/``) run only when chosen explicitly.
``use_backend`` (or the ``ASCEND_OPS_BACKEND`` environment variable) forces one backend; forcing
``native`` when ``_C`` did not import is an error too, never a silent fallback.
``ascend_ops.backends.kernel_backends`` reports the choice per op family.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator

import torch

BACKENDS = ("npu", "native", "reference")

_lock = threading.Lock()
_forced: list[str] = []
_counts: Counter[str] = Counter()
_backend_counts: Counter[tuple[str, str]] = Counter()
_native_module = None
_native_error: str | None = None

#: how to get ``ascend_ops._C`` back (the editable install compiles it, scripts/bootstrap.sh)
REBUILD_HINT = ("rebuild it with `pip install --no-deps --force-reinstall -e packages/ascend-ops` "
                "from the repository root (needs a C++17 compiler; `bash scripts/bootstrap.sh "
                "--force` reinstalls everything), or choose the pure-torch reference kernels "
                "explicitly with ASCEND_OPS_BACKEND=reference")


class NativeKernelsMissing(RuntimeError):
    """CPU tensors, no backend chosen, and ``ascend_ops._C`` did not import."""


# patch: native-omp-wait-policy (declared in vllm_ascend_platform.patches; docs/architecture.md)
def _load_native():
    global _native_module, _native_error
    if _native_module is None and _native_error is None:
        # libgomp reads its wait policy when it loads: ask ours (not torch's) to sleep instead of
        # spinning between kernels, so its idle threads do not steal cores from torch's pool.
        # The variable is restored right after, so child processes do not inherit it.
        old = os.environ.get("OMP_WAIT_POLICY")
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from ascend_ops import _C  # type: ignore[attr-defined]

            _native_module = _C
        except ImportError as exc:  # built without the hook, or no compiler was available
            _native_error = f"{type(exc).__name__}: {exc}"
        finally:
            if old is None:
                os.environ.pop("OMP_WAIT_POLICY", None)
    return _native_module


def native_available() -> bool:
    """Return True when the compiled CPU kernels (``ascend_ops._C``) import."""
    return _load_native() is not None


def native_module():
    """Return the ``ascend_ops._C`` module; RuntimeError saying how to build it when absent."""
    mod = _load_native()
    if mod is None:
        raise NativeKernelsMissing(
            f"the native CPU kernels (ascend_ops._C) are not available ({_native_error}); "
            + REBUILD_HINT)
    return mod


def _check_name(name: str) -> str:
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    return name


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[None]:
    """Force every ascend op inside the ``with`` block to run on backend ``name``.

    ``name`` is ``"npu"`` (calls torch_npu; on CPU tensors only useful with a fake torch_npu),
    ``"native"`` (the C++ kernels; RuntimeError at call time if not built) or ``"reference"``.
    Raises ValueError for any other name.
    """
    _check_name(name)
    with _lock:
        _forced.append(name)
    try:
        yield
    finally:
        with _lock:
            _forced.pop()


def forced_backend() -> str | None:
    """The backend forced by ``use_backend`` or ``ASCEND_OPS_BACKEND``, or None."""
    if _forced:
        return _forced[-1]
    env = os.environ.get("ASCEND_OPS_BACKEND", "").strip().lower()
    if env:
        return _check_name(env)
    return None


def select_backend(t: torch.Tensor) -> str:
    """Pick the backend for a call whose main input is ``t`` (see module docstring).

    Runs on every op call, so it reads the device type once and skips the ``_C`` import check
    once the module is loaded; the outcome is that of the rule above."""
    forced = forced_backend()
    if forced is not None:
        if forced == "native" and _native_module is None:
            native_module()  # raises with the fix when absent
        return forced
    kind = t.device.type
    if kind == "npu" or _simulated():
        return "npu"
    if kind == "cpu":
        if _native_module is None:
            native_module()  # raises NativeKernelsMissing (import failure + fix) when absent
        return "native"
    return "reference"


def _simulated() -> bool:
    sim = sys.modules.get("ascend_ops.simulator")
    return sim is not None and sim.active()


def eager_direct(*tensors: torch.Tensor) -> bool:
    """True when a public wrapper may call its op body directly instead of through
    ``torch.ops.ascend.*`` (saves the dispatcher round trip in eager mode): not tracing under
    torch.compile, no active TorchDispatchMode (fake tensors, functionalization) and plain
    tensors only. Results are identical either way; only the dispatch path differs."""
    if torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack():
        return False
    for t in tensors:
        if type(t) is not torch.Tensor:
            return False
    return True


def count(op: str, backend: str) -> None:
    with _lock:
        _counts[op] += 1
        _backend_counts[(op, backend)] += 1


def call_counts(per_backend: bool = False) -> dict:
    """Calls per op since start (or the last ``reset_call_counts``).

    Returns ``{op_name: n}``; with ``per_backend=True`` returns ``{(op_name, backend): n}``.
    Only real executions count (fake/meta tracing under torch.compile does not).
    """
    with _lock:
        return dict(_backend_counts if per_backend else _counts)


def reset_call_counts() -> None:
    """Zero all call counters."""
    with _lock:
        _counts.clear()
        _backend_counts.clear()
