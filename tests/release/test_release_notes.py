# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Release notes: one CHANGELOG.md style per distribution, towncrier drafts from changelog.d/.

Conventions (docs/releasing.md): title ``# Changelog — <dist>``; towncrier's start marker once;
every release heading ``## <dist> X.Y.Z (<date or "unreleased">)``, newest first.
"""

from __future__ import annotations

import re
import subprocess

import pytest
import tomllib
import wheelhouse as wh
from packaging.version import Version
from venvs import PREPARED

MARKER = "<!-- towncrier release notes start -->"
SOURCES = wh.sources()


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_changelog_style(name):
    folder = SOURCES[name]
    text = (folder / "CHANGELOG.md").read_text()
    assert text.splitlines()[0] == f"# Changelog — {name}"
    assert text.count(MARKER) == 1
    heads = re.findall(r"(?m)^## (.*)$", text.split(MARKER, 1)[1])
    assert heads, "no release section"
    versions = []
    for head in heads:
        m = re.fullmatch(rf"{re.escape(name)} (\S+) \((\d{{4}}-\d\d-\d\d|unreleased)\)", head)
        assert m, f"{folder / 'CHANGELOG.md'}: heading {head!r} is not '<dist> X.Y.Z (date)'"
        versions.append(Version(m.group(1)))
    assert versions == sorted(versions, reverse=True), "newest release first"
    config = tomllib.loads((folder / "towncrier.toml").read_text())["tool"]["towncrier"]
    assert config["name"] == name and config["filename"] == "CHANGELOG.md"
    assert (folder / config["directory"]).is_dir()


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_towncrier_draft(name):
    proc = subprocess.run([str(PREPARED / "bin" / "towncrier"), "build", "--draft",
                           "--version", "9.8.7"], cwd=SOURCES[name], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"## {name} 9.8.7 (" in proc.stdout, proc.stdout


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_fragments_have_a_known_type(name):
    config = tomllib.loads((SOURCES[name] / "towncrier.toml").read_text())["tool"]["towncrier"]
    types = {t["directory"] for t in config["type"]}
    for frag in (SOURCES[name] / config["directory"]).iterdir():
        if frag.name.startswith(".") and "." not in frag.name[1:]:
            continue  # .gitkeep
        parts = frag.name.split(".")
        assert len(parts) >= 3 and parts[-1] == "md" and parts[-2] in types, (
            f"{frag}: name it +<slug>.<type>.md with <type> one of {sorted(types)}")
