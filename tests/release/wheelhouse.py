# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Build the wheel and sdist of every distribution of the repo into one folder (the wheelhouse).

The seven distributions: the six layers under ``packages/*`` and the root meta-package
``vllm-ascend``. Each is built with PyPA ``build`` (``python -m build``): the sdist first, then
the wheel *from that sdist*, so a file missing from an sdist breaks its wheel build here rather
than on a user's machine. ``ascend_ops._C`` is compiled by scikit-build-core's hatchling hook in
"wheel" state, where ``packages/ascend-ops/csrc/CMakeLists.txt`` picks a portable ``-march``
(docs/releasing.md).

``--no-isolation`` (the default here) builds with the build backends of the running interpreter
(hatchling, scikit-build-core, pybind11: ``requirements/dev.txt``) instead of creating seven
isolated build environments; ``--isolated`` does what a release should (PEP 517 isolation,
backends fetched per ``[build-system] requires``).

Usage: ``python tests/release/wheelhouse.py [--out dist/wheelhouse] [--isolated]`` (nox session
``release`` runs it). Importable: :func:`build_all`, :func:`build_variant`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "dist" / "wheelhouse"


def sources() -> dict[str, Path]:
    """Distribution name -> project folder, for the meta-package and every ``packages/*``."""
    dirs = [ROOT, *sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))]
    return {tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"]: d for d in dirs}


def _norm(name: str) -> str:
    """Distribution name as it appears in wheel/sdist file names (PEP 427/625)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _build(src: Path, out: Path, *, isolated: bool, wheel_only: bool = False) -> None:
    cmd = [sys.executable, "-m", "build", "--outdir", str(out)]
    if not isolated:
        cmd.append("--no-isolation")
    if wheel_only:
        cmd.append("--wheel")
    cmd.append(str(src))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-6000:])
        raise RuntimeError(f"building {src} failed (exit {proc.returncode}): {' '.join(cmd)}")


def build_all(out: Path = DEFAULT_OUT, *, isolated: bool = False) -> list[Path]:
    """Build every distribution's sdist + wheel into ``out``; return the files built.

    Earlier artifacts of our distributions in ``out`` are removed first, so ``out`` holds exactly
    one version of each (``pip --find-links`` would otherwise pick the newest of several).

    Raises:
        RuntimeError: a build failed (its output tail is written to stderr), or a distribution
            did not produce exactly one wheel and one sdist.
    """
    out.mkdir(parents=True, exist_ok=True)
    names = sources()
    for f in out.iterdir():
        if f.is_file() and any(f.name.startswith(_norm(n) + "-") for n in names):
            f.unlink()
    for src in names.values():
        _build(src, out, isolated=isolated)
    built = sorted(f for f in out.iterdir() if f.suffix == ".whl" or f.name.endswith(".tar.gz"))
    for name in names:
        mine = [f for f in built if f.name.startswith(_norm(name) + "-")]
        if sorted(f.suffix for f in mine) != [".gz", ".whl"]:
            raise RuntimeError(f"{name}: expected one wheel and one sdist in {out}, got {mine}")
    return built


def source_version(src: Path) -> str:
    """The version of the distribution in folder ``src``: ``__version__`` of the module its
    ``[tool.hatch.version] path`` names (the one place a version is written)."""
    path = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["hatch"]["version"]["path"]
    match = re.search(r'(?m)^__version__ = "([^"]+)"$', (src / path).read_text())
    if match is None:
        raise ValueError(f"{src / path} has no literal `__version__ = \"...\"` line")
    return match.group(1)


def build_variant(folder: str, version: str, out: Path) -> Path:
    """Wheel of ``packages/<folder>`` with its version replaced by ``version``.

    The package folder is copied to a temporary directory and only the copy's ``__version__``
    (the file ``[tool.hatch.version]`` names, the version's one source) is edited (the checkout
    is never touched). Used to stage a single upgraded layer.

    Returns:
        Path of the wheel in ``out``.

    Raises:
        ValueError: ``folder`` is not a package folder, or its version file has no literal
            ``__version__``.
    """
    src = ROOT / "packages" / folder
    if not (src / "pyproject.toml").is_file():
        raise ValueError(f"folder={folder!r} is not a package under {ROOT / 'packages'}")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{folder}-{version}-") as tmp:
        copy = Path(tmp) / folder
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis"))
        text = (copy / "pyproject.toml").read_text()
        init = copy / tomllib.loads(text)["tool"]["hatch"]["version"]["path"]
        new, n = re.subn(r'(?m)^__version__ = "[^"]*"$', f'__version__ = "{version}"',
                         init.read_text(), count=1)
        if n != 1:
            raise ValueError(f"{init} has no literal `__version__ = \"...\"` line")
        init.write_text(new)
        _build(copy, out, isolated=False, wheel_only=True)
    name = tomllib.loads(text)["project"]["name"]
    wheels = list(out.glob(f"{_norm(name)}-{version}-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one {name} {version} wheel in {out}, got {wheels}")
    return wheels[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"wheelhouse folder (default: {DEFAULT_OUT.relative_to(ROOT)})")
    parser.add_argument("--isolated", action="store_true",
                        help="PEP 517 isolated builds (backends fetched from the index)")
    args = parser.parse_args(argv)
    built = build_all(args.out.resolve(), isolated=args.isolated)
    for f in built:
        print(os.path.relpath(f, Path.cwd()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
