# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Give a fresh virtualenv the third-party packages of a prepared venv without reinstalling them.

Why: every vLLM-facing package session needs vLLM, CPU torch and ~150 other wheels; installing
them per session costs minutes on a 2-core CI box. The repo's ``.venv`` (``scripts/bootstrap.sh``)
already has them, but it also has *all* our layers installed, so testing a layer there would not
prove that it works with only its declared dependencies (docs/architecture.md, "Layers").

How: the session venv's site-packages gets a symlink to every top-level entry of the prepared
venv's site-packages, except the files of our own distributions that the package under test does
not declare (found through each distribution's ``RECORD``). The allowed ones (the package itself
and its declared siblings, transitively) are linked as installed there (editable ``.pth`` + dist-info),
so nothing is rebuilt. Nothing is written into the prepared venv.

Usage: ``python venv_overlay.py <prepared-site-packages> <target-site-packages> <allowed-dist>...``
(the noxfile calls :func:`overlay` in-process).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import sys
from pathlib import Path

# Our distribution names (docs/architecture.md, "Layers"): the meta-package and every layer.
OUR_DISTS = re.compile(r"^(vllm-ascend(-[a-z]+)?|ascend-ops)$")
_MARK = ".venv-overlay-links"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_entries(dist: md.Distribution, site: Path) -> set[str]:
    """Top-level names in ``site`` that belong to ``dist`` (its dist-info and RECORD files)."""
    names = {Path(str(dist._path)).name}  # type: ignore[attr-defined]
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if parts and parts[0] != "..":
            names.add(parts[0])
    return names


def overlay(prepared_site: str | os.PathLike, target_site: str | os.PathLike,
            allowed: list[str]) -> list[str]:
    """Link ``prepared_site`` into ``target_site``, hiding our distributions not in ``allowed``.

    Args:
        prepared_site: site-packages directory of the prepared venv (read only).
        target_site: site-packages directory of the session venv (links are (re)made here).
        allowed: distribution names of ours that stay visible (package under test + siblings).

    Returns:
        Sorted names of our distributions that were hidden.

    Raises:
        ValueError: ``prepared_site`` is not a directory, or an allowed distribution is not
            installed there (run ``bash scripts/bootstrap.sh``).
    """
    src, dst = Path(prepared_site), Path(target_site)
    if not src.is_dir():
        raise ValueError(f"prepared_site {src} is not a directory; run scripts/bootstrap.sh")
    allowed_norm = {_norm(a) for a in allowed}
    # Distributions the session venv has itself (pip, setuptools): keep its own copy only.
    own = {_norm(d.metadata["Name"] or "") for d in md.distributions(path=[str(dst)])
           if not Path(str(d._path)).is_symlink()}  # type: ignore[attr-defined]
    hidden_entries: set[str] = set()
    hidden, present = [], set()
    for dist in md.distributions(path=[str(src)]):
        name = _norm(dist.metadata["Name"] or "")
        if name in own:
            hidden_entries |= _top_level_entries(dist, src)
            continue
        if not OUR_DISTS.match(name):
            continue
        present.add(name)
        if name not in allowed_norm:
            hidden.append(name)
            hidden_entries |= _top_level_entries(dist, src)
    missing = allowed_norm - present
    if missing:
        raise ValueError(f"allowed distributions {sorted(missing)} are not installed in {src}; "
                         "run `bash scripts/bootstrap.sh`")
    # Remove links from an earlier run (reused venv), never real files.
    mark = dst / _MARK
    if mark.is_file():
        for line in mark.read_text().splitlines():
            p = dst / line
            if line and p.is_symlink():
                p.unlink()
    made = []
    for entry in sorted(os.listdir(src)):
        if entry in hidden_entries or entry == "__pycache__" or (dst / entry).exists():
            continue
        (dst / entry).symlink_to(src / entry)
        made.append(entry)
    mark.write_text("\n".join(made) + "\n")
    return sorted(hidden)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    print("hidden:", overlay(sys.argv[1], sys.argv[2], sys.argv[3:]))
