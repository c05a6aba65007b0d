#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Add the SPDX license header to every Python, C++ and shell source of the repository that lacks it.

Every distribution is Apache-2.0 (``license`` in each pyproject.toml, ``LICENSE``). A source file
states it in its first lines, as SPDX recommends (https://spdx.dev/learn/handling-license-info/):

    # SPDX-License-Identifier: Apache-2.0        (Python and shell; // for C++)
    # Copyright 2026 The vllm-ascend authors

The header goes first, after a ``#!`` line and a PEP 263 encoding line when present. Shell
sources are ``*.sh`` files and files without a suffix whose first line is a ``sh`` / ``bash``
shebang (``.ci/run``). Files are those git tracks or would track (``git ls-files --cached
--others --exclude-standard``), so ``.venv``, build folders and other ignored paths are never
touched.

    python scripts/spdx.py           # add the header where it is missing; prints each file
    python scripts/spdx.py --check   # list files without it; exit 1 when there are any
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSE_ID = "Apache-2.0"
COPYRIGHT = "Copyright 2026 The vllm-ascend authors"
COMMENT = {".py": "#", ".pyi": "#", ".cpp": "//", ".cc": "//", ".h": "//", ".hpp": "//",
           ".sh": "#"}
#: a suffix-less file with this first line is a shell source (``#!/usr/bin/env bash``, ``#!/bin/sh``)
_SHELL_SHEBANG = re.compile(r"^#![ \t]*\S*/(?:env[ \t]+)?(?:ba|da|k|z)?sh\b")
#: a header counts when this appears in the first lines (any comment style, any copyright)
MARKER = f"SPDX-License-Identifier: {LICENSE_ID}"
HEAD_LINES = 5
_ENCODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


def kind(path: Path) -> str | None:
    """The key of :data:`COMMENT` for ``path`` (its suffix; ``".sh"`` for a suffix-less file
    starting with a shell shebang), or None when it is not a source this script covers."""
    if path.suffix in COMMENT:
        return path.suffix
    if path.suffix or not path.is_file():
        return None
    with path.open("rb") as f:
        first = f.readline(200).decode("utf-8", errors="replace")
    return ".sh" if _SHELL_SHEBANG.match(first) else None


def source_files(root: Path = ROOT) -> list[Path]:
    """Python/C++/shell sources git tracks or would track under ``root``, sorted."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=root, check=True, capture_output=True).stdout.decode()
    files = [root / name for name in out.split("\0") if name]
    return sorted(p for p in files if p.is_file() and kind(p) is not None)


def has_header(text: str) -> bool:
    """True when the SPDX identifier is in the file's first lines."""
    return any(MARKER in line for line in text.splitlines()[:HEAD_LINES])


def with_header(text: str, suffix: str) -> str:
    """``text`` with the two header lines inserted (after a shebang / encoding line)."""
    mark = COMMENT[suffix]
    header = f"{mark} {MARKER}\n{mark} {COPYRIGHT}\n"
    lines = text.splitlines(keepends=True)
    keep = 0
    if lines and lines[0].startswith("#!"):
        keep = 1
    if suffix in (".py", ".pyi") and len(lines) > keep and _ENCODING.match(lines[keep]):
        keep += 1
    return "".join(lines[:keep]) + header + "".join(lines[keep:])


def missing(root: Path = ROOT) -> list[Path]:
    """Sources under ``root`` without the header."""
    return [p for p in source_files(root) if not has_header(p.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only list files without the header; exit 1 when there are any")
    args = parser.parse_args(argv)
    lacking = missing()
    for path in lacking:
        print(path.relative_to(ROOT))
        if not args.check:
            path.write_text(with_header(path.read_text(encoding="utf-8"), kind(path) or ""),
                            encoding="utf-8")
    if args.check and lacking:
        print(f"{len(lacking)} file(s) without '{MARKER}': run python scripts/spdx.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
