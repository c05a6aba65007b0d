# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Backend selection and call counting shared by every op.

Selection rule (ops contract): tensors on an ``npu`` device, or any tensor while the simulated NPU
(``ascend_ops.simulator.install()``, docs/simulated-npu.md) is active -> the torch_npu branch;
otherwise (CPU tensors) the compiled ``ascend_ops._C`` kernels. When ``_C`` did not import, a CPU
call raises :class:`NativeKernelsMissing` naming the import failure and the rebuild command: the
pure-torch reference kernels (slower, ``benchmarks/``) run only when chosen explicitly.
``use_backend`` (or the ``ASCEND_OPS_BACKEND`` environment variable) forces one backend; forcing
``native`` when ``_C`` did not import is an error too, never a silent fallback.
``ascend_ops.backends.kernel_backends`` reports the choice per op family.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections import Counter
from collections.abc import Iterator
from types import ModuleType

import torch

from ascend_ops.device import hooks

BACKENDS = ("npu", "native", "reference")

_lock = threading.Lock()
_forced: list[str] = []
#: calls per (op, backend); per-op totals are summed in ``call_counts`` (one update per call)
_backend_counts: Counter[tuple[str, str]] = Counter()
_native_module: ModuleType | None = None
_native_error: str | None = None
_Tensor = torch.Tensor
_dispatch_stack_len = torch._C._len_torch_dispatch_stack

#: how to get ``ascend_ops._C`` back (the editable install compiles it, scripts/bootstrap.sh)
REBUILD_HINT = ("rebuild it with `pip install --no-deps --force-reinstall -e packages/ascend-ops` "
                "from the repository root (needs a C++17 compiler; `bash scripts/bootstrap.sh "
                "--force` reinstalls everything), or choose the pure-torch reference kernels "
                "explicitly with ASCEND_OPS_BACKEND=reference")


class NativeKernelsMissing(RuntimeError):
    """CPU tensors, no backend chosen, and ``ascend_ops._C`` did not import."""


# patch: native-omp-wait-policy (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def _load_native() -> ModuleType | None:
    global _native_module, _native_error
    if _native_module is None and _native_error is None:
        # libgomp reads its wait policy when it loads: ask ours (not torch's) to sleep instead of
        # spinning between kernels, so its idle threads do not steal cores from torch's pool.
        # The variable is restored right after, so child processes do not inherit it.
        old = os.environ.get("OMP_WAIT_POLICY")
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            # by name: the extension is a leaf, and a ``from ascend_ops import _C`` statement
            # reads as an import of this package from a module the package imports
            _native_module = importlib.import_module("ascend_ops._C")
        except ImportError as exc:  # built without the hook, or no compiler was available
            _native_error = f"{type(exc).__name__}: {exc}"
        finally:
            if old is None:
                os.environ.pop("OMP_WAIT_POLICY", None)
    return _native_module


def native_available() -> bool:
    """Return True when the compiled CPU kernels (``ascend_ops._C``) import."""
    return _load_native() is not None


def native_vector_isa() -> str | None:
    """The x86 vector extension ``ascend_ops._C`` was compiled for ("avx512", "avx2" or
    "generic", from its ``-march``), or None when it is not built. Kernel layouts that were
    measured per ISA (``native.linear``, ``native.moe``) choose by it."""
    mod = _load_native()
    if mod is None:
        return None
    return mod.vector_isa() if hasattr(mod, "vector_isa") else "avx512"  # built before the query


def native_module() -> ModuleType:
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


#: os.environ's raw store and key encoder (CPython's ``os._Environ``, which every
#: ``os.environ[...] = ...`` / ``monkeypatch.setenv`` goes through): reading the raw value is a
#: dict lookup, where ``os.environ.get`` decodes key and value on every op call.
_ENV_NAME = "ASCEND_OPS_BACKEND"
_environ = os.environ
_environ_data = getattr(_environ, "_data", None)
_environ_key = _environ.encodekey(_ENV_NAME) if hasattr(_environ, "encodekey") else None
#: (raw value, backend it names): the parse of the last valid value, redone when it changes
_env_parsed: tuple = (None, None)


def _env_backend() -> str | None:
    """``ASCEND_OPS_BACKEND`` parsed as before on every call (an invalid name raises each
    time), but the parse of a valid raw value is kept until the raw value changes."""
    global _env_parsed
    if os.environ is _environ and type(_environ_data) is dict and _environ_key is not None:
        raw = _environ_data.get(_environ_key)
    else:  # os.environ was replaced: read it the plain way
        raw = os.environ.get(_ENV_NAME)
    if raw is None:
        return None
    last = _env_parsed
    if type(last[0]) is type(raw) and last[0] == raw:
        return last[1]
    env = os.environ.get(_ENV_NAME, "").strip().lower()
    name = _check_name(env) if env else None
    _env_parsed = (raw, name)
    return name


def forced_backend() -> str | None:
    """The backend forced by ``use_backend`` or ``ASCEND_OPS_BACKEND``, or None."""
    if _forced:
        return _forced[-1]
    return _env_backend()


def select_backend(t: torch.Tensor) -> str:
    """Pick the backend for a call whose main input is ``t`` (see module docstring).

    Runs on every op call, so it reads the device type once and skips the ``_C`` import check
    once the module is loaded; the outcome is that of the rule above."""
    forced = _forced[-1] if _forced else _env_backend()
    if forced is not None:
        if forced == "native" and _native_module is None:
            native_module()  # raises with the fix when absent
        return forced
    if _simulated():
        return "npu"
    if type(t) is _Tensor and t.is_cpu:  # cheaper than t.device.type; same rule as below
        if _native_module is None:
            native_module()  # raises NativeKernelsMissing (import failure + fix) when absent
        return "native"
    kind = t.device.type
    if kind == "npu":
        return "npu"
    if kind == "cpu":
        if _native_module is None:
            native_module()
        return "native"
    return "reference"


_simulated = hooks.simulator_active  # the simulated NPU registers there (device/hooks.py)


def eager_direct(*tensors: torch.Tensor) -> bool:
    """True when a public wrapper may call its op body directly instead of through
    ``torch.ops.ascend.*`` (saves the dispatcher round trip in eager mode): not tracing under
    torch.compile, no active TorchDispatchMode (fake tensors, functionalization) and plain
    tensors only. Results are identical either way; only the dispatch path differs."""
    if torch.compiler.is_compiling() or _dispatch_stack_len():
        return False
    for t in tensors:
        if type(t) is not _Tensor:
            return False
    return True



def count(op: str, backend: str) -> None:
    key = (op, backend)
    with _lock:
        _backend_counts[key] += 1


def call_counts(per_backend: bool = False) -> dict:
    """Calls per op since start (or the last ``reset_call_counts``).

    Returns ``{op_name: n}``; with ``per_backend=True`` returns ``{(op_name, backend): n}``.
    Only real executions count (fake/meta tracing under torch.compile does not).
    """
    with _lock:
        per = dict(_backend_counts)
    if per_backend:
        return per
    totals: dict[str, int] = {}
    for (op, _backend), n in per.items():
        totals[op] = totals.get(op, 0) + n
    return totals


def reset_call_counts() -> None:
    """Zero all call counters."""
    with _lock:
        _backend_counts.clear()
