# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``ascend-ops`` alone in a torch-only venv: its README example and its standalone test run.

The venv sees torch and its own requirements (and pytest to run the sdist's tests), nothing of
vLLM. The tests are the ones *shipped in the ascend-ops sdist* (``tests/test_readme.py`` extracts
and runs the README's python block; ``tests/test_standalone.py`` checks that vLLM is not
importable), run against the wheel installed from the wheelhouse.
"""

from __future__ import annotations

import tarfile

import pytest
import venvs
import wheelhouse as wh


@pytest.fixture(scope="module")
def ops_venv(tmp_path_factory, wheelhouse):
    venv = venvs.closure_venv(tmp_path_factory.mktemp("venv-ops") / "v", ["torch", "pytest"])
    venv.pip_install([wheelhouse], "ascend-ops")
    return venv


@pytest.fixture(scope="module")
def sdist_tree(tmp_path_factory, wheelhouse):
    (sdist,) = wheelhouse.glob(f"{wh._norm('ascend-ops')}-*.tar.gz")
    out = tmp_path_factory.mktemp("ops-sdist")
    with tarfile.open(sdist) as t:
        t.extractall(out, filter="data")
    (root,) = out.iterdir()
    return root


def test_venv_has_torch_but_no_vllm(ops_venv):
    code = ("import importlib.util as u, torch, ascend_ops\n"
            "print(torch.__version__, u.find_spec('vllm') is None, ascend_ops.native_available(),"
            " ascend_ops.__file__)")
    version, no_vllm, native, where = ops_venv.run("-c", code).stdout.split()
    assert no_vllm == "True" and native == "True"
    assert where.startswith(str(ops_venv.site))


def test_readme_example_and_standalone_check(ops_venv, sdist_tree):
    tests = sdist_tree / "tests"
    assert (sdist_tree / "README.md").is_file() and (tests / "test_readme.py").is_file()
    proc = ops_venv.run("-m", "pytest", str(tests / "test_readme.py"),
                        str(tests / "test_standalone.py"), "-q", "-p", "no:cacheprovider",
                        "-rs", env={"ASCEND_OPS_STANDALONE": "1"})
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout
