# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Fixtures for the release tests: the wheelhouse and venvs installed from it only.

``VLLM_ASCEND_WHEELHOUSE`` names a folder that ``tests/release/wheelhouse.py`` filled (the nox
session ``release`` sets it); without it the wheelhouse is built once into a temporary folder.
Venvs are created once per test run and shared by the tests that only read them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import venvs  # noqa: E402
import wheelhouse as wh  # noqa: E402

#: Environment for anything that starts our plugin in a release venv: CPU emulation, offline,
#: in-process engine core (one process: quicker on 2 cores, errors surface in the test's output).
PLUGIN_ENV: dict[str, str | None] = {
    "VLLM_ASCEND_EMULATE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "VLLM_TARGET_DEVICE": None,  # would bypass vLLM's platform plugins
    "VLLM_PLUGINS": None,
}


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    env = os.environ.get("VLLM_ASCEND_WHEELHOUSE")
    if env:
        path = Path(env)
        if not any(path.glob("*.whl")):
            pytest.fail(f"VLLM_ASCEND_WHEELHOUSE={path} holds no wheels: run "
                        "`python tests/release/wheelhouse.py --out <folder>` first")
        return path
    out = tmp_path_factory.mktemp("wheelhouse")
    wh.build_all(out)
    return out


@pytest.fixture(scope="session")
def full_venv(tmp_path_factory, wheelhouse) -> venvs.Venv:
    """``pip install vllm-ascend[all]`` from the wheelhouse (third-party packages linked)."""
    venv = venvs.overlay_venv(tmp_path_factory.mktemp("venv-all") / "v")
    venv.pip_install([wheelhouse], "vllm-ascend[all]")
    return venv


@pytest.fixture(scope="session")
def meta_only_venv(tmp_path_factory, wheelhouse) -> venvs.Venv:
    """``pip install vllm-ascend`` alone: the meta-package, the platform and ascend-ops."""
    venv = venvs.overlay_venv(tmp_path_factory.mktemp("venv-meta") / "v")
    venv.pip_install([wheelhouse], "vllm-ascend")
    return venv
