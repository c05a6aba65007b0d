# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""What the wheelhouse holds: one wheel + sdist per distribution, metadata that is this project's
own, license files in every wheel, and a portable ``ascend_ops._C``.

Sources of the rules: the core metadata spec (packaging.python.org, "Core metadata
specifications": ``License-File``, ``Project-URL``, ``Requires-Python``, ``Classifier``), PEP 639
(license files under ``.dist-info/licenses/``), PEP 517/518 (``[build-system] requires``).
"""

from __future__ import annotations

import email.parser
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import tomllib
import wheelhouse as wh

NAMES = sorted(wh.sources())
FOREIGN_REPO = "github.com/vllm-project/vllm-ascend"


def _files(wheelhouse: Path, name: str) -> tuple[Path, Path]:
    stem = wh._norm(name)
    wheels = list(wheelhouse.glob(f"{stem}-*.whl"))
    sdists = list(wheelhouse.glob(f"{stem}-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, (name, wheels, sdists)
    return wheels[0], sdists[0]


def _lowest_minor(spec: str) -> int:
    """Lowest Python 3 minor version ``spec`` admits (e.g. ``>=3.11,<3.15`` -> 11)."""
    from packaging.specifiers import SpecifierSet

    return next(m for m in range(6, 30) if SpecifierSet(spec).contains(f"3.{m}"))


def _vllm_requires_python() -> str:
    """``Requires-Python`` of the vLLM distribution installed in the prepared venv."""
    import importlib.metadata as md

    try:
        return md.metadata("vllm")["Requires-Python"]
    except md.PackageNotFoundError:
        pytest.skip("vLLM is not installed in the prepared venv")


def _wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(meta).decode()), z.namelist()


def test_seven_distributions():
    assert NAMES == ["ascend-ops", "vllm-ascend", "vllm-ascend-attention", "vllm-ascend-comm",
                     "vllm-ascend-graph", "vllm-ascend-models", "vllm-ascend-platform"]


@pytest.mark.parametrize("name", NAMES)
def test_wheel_metadata_is_this_projects_own(wheelhouse, name):
    wheel, sdist = _files(wheelhouse, name)
    meta, names = _wheel_metadata(wheel)
    project = tomllib.loads((wh.sources()[name] / "pyproject.toml").read_text())["project"]
    assert meta["Name"] == name and meta["Version"] == wh.source_version(wh.sources()[name])
    assert "version" not in project  # one source: __version__ ([tool.hatch.version])
    assert meta["Requires-Python"] == project["requires-python"]
    if name != "ascend-ops":  # vLLM-facing: never admit a Python the pinned vLLM refuses
        assert _lowest_minor(meta["Requires-Python"]) >= _lowest_minor(_vllm_requires_python())
    assert meta["License-Expression"] == "Apache-2.0"
    assert FOREIGN_REPO not in str(meta), "metadata still points at another project's repository"
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    # PEP 639: the license text travels in the wheel's .dist-info/licenses/
    assert meta.get_all("License-File") == ["LICENSE"]
    assert any(re.fullmatch(r"[^/]+\.dist-info/licenses/LICENSE", n) for n in names), names
    # the module's __version__ (what users print) agrees with the distribution's version
    with zipfile.ZipFile(wheel) as z:
        (init,) = [n for n in z.namelist() if re.fullmatch(r"[a-z_]+/__init__\.py", n)]
        found = re.search(r'(?m)^__version__ = "([^"]+)"$', z.read(init).decode())
    assert found and found.group(1) == meta["Version"], (init, found and found.group(1))
    # PEP 561: the package says it is typed, and the native module has its stub beside it
    package = init.split("/", 1)[0]
    assert f"{package}/py.typed" in names, f"{name}: no {package}/py.typed in the wheel"
    if name == "ascend-ops":
        assert "ascend_ops/_C.pyi" in names, "ascend-ops: the wheel lacks the _C stub"
    with tarfile.open(sdist) as t:
        members = {m.split("/", 1)[1] for m in t.getnames() if "/" in m}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"} <= members


def test_meta_package_sdist_holds_only_its_own_sources(wheelhouse):
    _, sdist = _files(wheelhouse, "vllm-ascend")
    with tarfile.open(sdist) as t:
        leaked = [m for m in t.getnames() if "/packages/" in m]
    assert not leaked, f"layer sources inside the meta-package sdist: {leaked[:5]}"


def test_build_requires_never_name_torch():
    for name, src in wh.sources().items():
        requires = tomllib.loads((src / "pyproject.toml").read_text())["build-system"]["requires"]
        assert not [r for r in requires if re.match(r"torch\b", r)], (name, requires)


def test_ascend_ops_wheel_ships_its_typing(wheelhouse):
    """The ascend-ops wheel carries the PEP 561 marker and the stub of its native module, so
    type checkers of its users read ``ascend_ops`` and ``ascend_ops._C`` typed."""
    wheel, _ = _files(wheelhouse, "ascend-ops")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert {"ascend_ops/py.typed", "ascend_ops/_C.pyi"} <= names


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) not installed")
def test_ascend_ops_native_module_is_portable(wheelhouse, tmp_path):
    """The released ``_C`` carries no AVX-512 instruction (zmm/k-mask registers): it must load on
    x86-64-v3 CPUs (csrc/CMakeLists.txt's wheel default), not only on the build machine."""
    wheel, _ = _files(wheelhouse, "ascend-ops")
    with zipfile.ZipFile(wheel) as z:
        so = [n for n in z.namelist() if re.fullmatch(r"ascend_ops/_C\..*\.so", n)]
        assert len(so) == 1, z.namelist()
        z.extract(so[0], tmp_path)
    if not re.search(r"-linux_x86_64\.whl$", wheel.name):
        pytest.skip(f"ISA check is for x86-64 wheels, not {wheel.name}")
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(tmp_path / so[0])],
                         capture_output=True, text=True, check=True).stdout
    assert "%ymm" in asm, "expected AVX2 code (x86-64-v3 baseline)"
    zmm = [line for line in asm.splitlines() if "%zmm" in line]
    assert not zmm, f"AVX-512 instructions in the wheel's _C: {zmm[:3]}"
