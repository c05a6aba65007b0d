# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Throwaway virtual environments for the release tests.

Each venv is created without pip (``python -m venv --without-pip``) and gets third-party packages
as symlinks into the prepared ``.venv`` (``scripts/bootstrap.sh``): vLLM, CPU torch and the
rest are never downloaded or reinstalled. Every distribution of ours is hidden there, so the only
copies of ours a venv sees are the ones pip installs into it from the wheelhouse.

pip runs from ``.venv`` against the target interpreter (``pip --python``), with ``--no-index
--find-links <wheelhouse>`` and no pip configuration files: nothing but our wheels can be
installed, so pip never replaces (or deletes through) a linked third-party package.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREPARED = Path(os.environ.get("VLLM_ASCEND_VENV", ROOT / ".venv"))
PREPARED_PY = PREPARED / "bin" / "python"

sys.path.insert(0, str(ROOT / "scripts"))
from venv_overlay import _top_level_entries, overlay  # noqa: E402


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def prepared_site() -> Path:
    """site-packages of the prepared venv."""
    out = subprocess.check_output(
        [str(PREPARED_PY), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True)
    return Path(out.strip())


class Venv:
    """A venv at ``path`` with helpers to install our wheels and run code in it."""

    def __init__(self, path: Path):
        self.path = path
        self.python = path / "bin" / "python"
        ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
        self.site = path / "lib" / ver / "site-packages"

    def pip_install(self, find_links: list[Path], *args: str) -> subprocess.CompletedProcess:
        """``pip install --no-index --find-links ...`` into this venv; raises on failure."""
        links = [a for d in find_links for a in ("--find-links", str(d))]
        cmd = [str(PREPARED_PY), "-m", "pip", "--python", str(self.python), "install",
               "--no-index", "--disable-pip-version-check", "--no-cache-dir", *links, *args]
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
        env.pop("PIP_FIND_LINKS", None)
        env.pop("PIP_EXTRA_INDEX_URL", None)
        proc = subprocess.run(cmd, env=env, text=True, capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def run(self, *args: str, env: dict[str, str | None] | None = None, timeout: float = 600,
            check: bool = True) -> subprocess.CompletedProcess:
        """Run ``python *args`` (or ``bin/<args[0]>`` when it names a script of this venv)."""
        script = self.path / "bin" / args[0]
        exe = script if "/" not in args[0] and script.is_file() else None
        cmd = [str(exe), *args[1:]] if exe else [str(self.python), *args]
        full_env = {**os.environ, "PYTHONNOUSERSITE": "1"}
        full_env.pop("PYTHONPATH", None)
        full_env.pop("VIRTUAL_ENV", None)
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value
        proc = subprocess.run(cmd, env=full_env, text=True, capture_output=True, timeout=timeout,
                              cwd=self.path)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                                 f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-8000:]}")
        return proc

    def dist_version(self, name: str) -> str | None:
        """Version of distribution ``name`` as this venv sees it, or None."""
        code = ("import importlib.metadata as m, sys\n"
                "try: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: print('')")
        out = self.run("-c", code, name).stdout.strip()
        return out or None


def _create(path: Path) -> Venv:
    subprocess.run([sys.executable if not PREPARED_PY.exists() else str(PREPARED_PY), "-m",
                    "venv", "--without-pip", str(path)], check=True)
    venv = Venv(path)
    if not venv.site.is_dir():
        raise RuntimeError(f"{path}: no site-packages at {venv.site}")
    return venv


def overlay_venv(path: Path) -> Venv:
    """A venv seeing every third-party package of ``.venv`` and none of our distributions."""
    venv = _create(path)
    hidden = overlay(prepared_site(), venv.site, [])
    if not hidden:
        raise RuntimeError(f"none of our distributions found in {PREPARED}: run scripts/bootstrap.sh")
    return venv


def closure(roots: list[str], site: Path) -> list[md.Distribution]:
    """The distributions in ``site`` that ``roots`` need (unconditional requirements, transitively)."""
    from packaging.requirements import Requirement

    by_name = {_norm(d.metadata["Name"] or ""): d for d in md.distributions(path=[str(site)])}
    seen: dict[str, md.Distribution] = {}
    todo = [_norm(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        dist = by_name.get(name)
        if dist is None:
            raise RuntimeError(f"{name} is not installed in {site}: run scripts/bootstrap.sh")
        seen[name] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(_norm(req.name))
    return list(seen.values())


def closure_venv(path: Path, roots: list[str]) -> Venv:
    """A venv seeing only ``roots`` and their requirements from ``.venv`` (e.g. torch alone)."""
    venv = _create(path)
    src = prepared_site()
    names: set[str] = set()
    for dist in closure(roots, src):
        names |= _top_level_entries(dist, src)
    for name in sorted(names):
        if (src / name).exists() and not (venv.site / name).exists():
            (venv.site / name).symlink_to(src / name)
    return venv


def host_platform_tag() -> str:
    """This interpreter's platform tag, e.g. ``linux_x86_64`` (for wheel-name checks)."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")
