# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The one version check (vLLM against the platform's and every installed layer's range) and
the layer-skew check.

Expected verdicts follow PEP 440 (a dev/local/pre-release of 0.34.N belongs to the 0.34 release
line, and so does the empty-target build's local version 0.34.0+empty, vLLM's setup.py
get_vllm_version) and the supported line each description states (>=0.34,<0.35: 0.34 only,
docs/model-runner-v2.md); the message
format is the one docs/architecture.md ("The layer contract") documents.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from vllm_ascend_platform.startup import contract, version_check


@pytest.fixture(autouse=True)
def _fresh_verdict():
    version_check._reset_for_tests()
    yield
    version_check._reset_for_tests()


@pytest.mark.parametrize("version", [
    "0.34.0", "0.34.1", "0.34.9", "0.34.1.dev12+gabc123", "0.34.0rc1", "0.34.0+empty",
    "0.34.0+cpu", "0.34.0.post1", "0.34.0.dev3+gdeadbee",
])
def test_supported_release_line_accepted(version):
    assert version_check.is_supported_vllm(version) is True
    assert version_check.vllm_version_problem(version) is None


@pytest.mark.parametrize("version", [
    "0.31.0", "0.32.0", "0.32.9", "0.33.0", "0.33.1", "0.33.0+empty", "0.35.0",
    "0.35.0.dev3+gdeadbee", "1.33.0", "0.3.3", "dev", "",
])
def test_other_versions_refused_in_one_line(version):
    assert version_check.is_supported_vllm(version) is False
    msg = version_check.vllm_version_problem(version)
    assert msg is not None and "\n" not in msg
    assert f"vLLM {version} is installed" in msg
    for desc in contract.installed_layers():  # every installed layer is named with its range
        assert f"{desc.distribution} {desc.version} (supports vLLM >=0.34,<0.35)" in msg
    assert "install vLLM '>=0.34,<0.35' built from its source for the empty target" in msg
    assert "VLLM_TARGET_DEVICE=empty" in msg and "VLLM_ASCEND_SKIP_VERSION_CHECK=1" in msg


def _with_layers(monkeypatch, *descriptions):
    monkeypatch.setattr(contract, "installed_layers",
                        lambda: tuple(contract.validate(d, "test") for d in descriptions))


def _desc(name, vllm):
    return {"name": name, "distribution": f"vllm-ascend-{name}", "version": "0.1.0",
            "vllm": vllm, "provides": {}}


def test_out_of_range_layer_is_named_with_its_range_and_the_fix(monkeypatch):
    # installed vLLM 0.32.2; one layer accepts it, the platform and another do not
    _with_layers(monkeypatch, _desc("attention", ">=0.32,<0.35"), _desc("seventh", ">=0.34,<0.35"))
    monkeypatch.setattr(version_check, "_installed_version", lambda dist: "0.2.0")
    msg = version_check.vllm_version_problem("0.32.2")
    assert msg == (
        "vLLM 0.32.2 is installed, but these Ascend layers do not support it: "
        "vllm-ascend-platform 0.2.0 (supports vLLM >=0.34,<0.35), vllm-ascend-seventh 0.1.0 "
        "(supports vLLM >=0.34,<0.35); fix: install vLLM '>=0.32,>=0.34,<0.35' built from its "
        "source for the empty target (VLLM_TARGET_DEVICE=empty pip install --no-build-isolation "
        "<vLLM source tree or sdist>; in a vllm-ascend checkout: bash scripts/bootstrap.sh), or "
        "set VLLM_ASCEND_SKIP_VERSION_CHECK=1 to run anyway, unsupported."
    )


def test_message_is_the_documented_one(monkeypatch):
    # docs/architecture.md, "The layer contract", quotes the message for vLLM 0.32.0 with the
    # comm layer alone installed; the code must produce exactly that text
    from pathlib import Path

    doc = (Path(version_check.__file__).parents[5] / "docs" / "architecture.md").read_text()
    start = doc.index("`vLLM 0.32.0 is installed")
    quoted = " ".join(doc[start + 1:doc.index("`", start + 1)].split())
    _with_layers(monkeypatch, {**_desc("comm", ">=0.34,<0.35"), "version": "0.2.0"})
    monkeypatch.setattr(version_check, "_installed_version", lambda dist: "0.2.0")
    assert version_check.vllm_version_problem("0.32.0") == quoted


def test_layers_without_a_common_vllm_say_so(monkeypatch):
    _with_layers(monkeypatch, _desc("seventh", ">=0.35,<0.36"))
    msg = version_check.vllm_version_problem("0.34.0")
    assert "vllm-ascend-seventh 0.1.0 (supports vLLM >=0.35,<0.36)" in msg
    assert "vllm-ascend-platform" not in msg  # the platform accepts 0.34.0
    assert "no vLLM release satisfies every installed layer" in msg


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "On", " 1 "])
def test_skip_spellings_true(monkeypatch, value):
    monkeypatch.setenv("VLLM_ASCEND_SKIP_VERSION_CHECK", value)
    assert version_check.skip_requested() is True


@pytest.mark.parametrize("value", ["", "0", "false", "No", "off"])
def test_skip_spellings_false(monkeypatch, value):
    monkeypatch.setenv("VLLM_ASCEND_SKIP_VERSION_CHECK", value)
    assert version_check.skip_requested() is False


def test_skip_unknown_spelling_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_SKIP_VERSION_CHECK", "please")
    with pytest.raises(ValueError, match="VLLM_ASCEND_SKIP_VERSION_CHECK='please'"):
        version_check.skip_requested()


def test_startup_problem_runs_once_and_honours_skip(monkeypatch, capsys):
    import vllm

    _with_layers(monkeypatch, _desc("comm", ">=0.34,<0.35"))
    monkeypatch.setattr(vllm, "__version__", "0.35.0")
    monkeypatch.delenv("VLLM_ASCEND_SKIP_VERSION_CHECK", raising=False)
    problem = version_check.startup_problem()
    assert problem is not None and "vllm-ascend-comm 0.1.0" in problem
    monkeypatch.setattr(vllm, "__version__", "0.34.0")
    assert version_check.startup_problem() == problem  # decided once per process
    version_check._reset_for_tests()
    monkeypatch.setattr(vllm, "__version__", "0.35.0")
    monkeypatch.setenv("VLLM_ASCEND_SKIP_VERSION_CHECK", "yes")
    assert version_check.startup_problem() is None  # the same rule as everywhere: "yes" skips


def test_installed_vllm_is_read_from_dunder_version(monkeypatch):
    import vllm

    real = str(vllm.__version__)
    monkeypatch.setattr(vllm, "__version__", "0.30.0")
    assert version_check.installed_vllm_version() == "0.30.0"
    # the answer is vllm.__version__, not the distribution's metadata (which, for the `vllm`
    # distribution an empty-target build installs, names the installed 0.34 build)
    assert importlib.metadata.version("vllm").startswith(real.split("+")[0])
    assert real.startswith("0.34.")


@pytest.mark.parametrize("version", ["0.34.0", "0.34.0rc1", "0.34.0+empty", "0.34.2"])
def test_runner_is_model_runner_v2(version):
    # vLLM 0.34.0 deleted vllm/v1/worker/gpu_model_runner.py (Model Runner V1): the worker
    # builds the MRv2 runner (docs/model-runner-v2.md)
    assert version_check.runner_label(version) == version_check.RUNNER
    assert version_check.RUNNER.startswith("MRv2 (NPUModelRunnerV2 ")


@pytest.mark.parametrize("version", ["0.33.0", "0.33.0+empty", "0.35.0"])
def test_runner_line_of_an_unsupported_vllm_says_it_is_refused(version):
    label = version_check.runner_label(version)
    assert label.startswith(version_check.RUNNER)
    assert f"vLLM {version} is outside >=0.34,<0.35" in label and "SKIP_VERSION_CHECK=1" in label


def _fake_metadata(monkeypatch, installed: dict[str, str], requires: list[str]):
    real_version, real_requires = importlib.metadata.version, importlib.metadata.requires

    def version(dist):
        if dist in installed:
            return installed[dist]
        if dist.startswith(("vllm-ascend", "ascend-ops")):
            raise importlib.metadata.PackageNotFoundError(dist)
        return real_version(dist)

    def requires_(dist):
        return requires if dist == "vllm-ascend" else real_requires(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(importlib.metadata, "requires", requires_)


def test_layer_skew_names_the_mismatch(monkeypatch):
    _fake_metadata(
        monkeypatch,
        {"ascend-ops": "0.1.3", "vllm-ascend-platform": "0.1.0", "vllm-ascend-attention": "0.2.0"},
        ["vllm-ascend-platform<0.2,>=0.1", "ascend-ops<0.2,>=0.1",
         'vllm-ascend-attention<0.2,>=0.1; extra == "attention"',
         'vllm-ascend-comm<0.2,>=0.1; extra == "comm"'],
    )
    problems = version_check.layer_skew_problems()
    assert len(problems) == 1
    assert "vllm-ascend-attention 0.2.0" in problems[0]
    assert "<0.2,>=0.1" in problems[0]
    assert "pip install packages/ascend-attention" in problems[0]
    by_key = {s.layer.key: s for s in version_check.layer_statuses()}
    assert by_key["ops"].ok and by_key["ops"].version == "0.1.3"
    assert by_key["comm"].version is None and by_key["comm"].ok  # not installed is not skew


def test_layer_skew_names_the_vllm_range_of_each_side(monkeypatch):
    # a layer of the vLLM 0.32 line (0.1.x) beside a meta-package and platform of the 0.34 line
    # (0.2.x): the message names the layer's vLLM range and the one of the layers in range
    _fake_metadata(
        monkeypatch,
        {"ascend-ops": "0.2.0", "vllm-ascend-platform": "0.2.0", "vllm-ascend-attention": "0.1.0"},
        ["vllm-ascend-platform<0.3,>=0.2", "ascend-ops<0.3,>=0.2",
         'vllm-ascend-attention<0.3,>=0.2; extra == "attention"'],
    )
    _with_layers(monkeypatch, _desc("attention", ">=0.32,<0.33"))
    assert version_check.layer_skew_problems() == [
        "layer vllm-ascend-attention 0.1.0 (supports vLLM >=0.32,<0.33) does not satisfy "
        "vllm-ascend's range vllm-ascend-attention<0.3,>=0.2 (the layers in that range support "
        "vLLM >=0.34,<0.35); install a matching version (from the checkout: pip install "
        "packages/ascend-attention)."]


def test_layer_skew_of_the_op_layer_says_it_has_no_vllm_range(monkeypatch):
    _fake_metadata(monkeypatch, {"ascend-ops": "0.1.0", "vllm-ascend-platform": "0.2.0"},
                   ["vllm-ascend-platform<0.3,>=0.2", "ascend-ops<0.3,>=0.2"])
    _with_layers(monkeypatch)
    (problem,) = version_check.layer_skew_problems()
    assert problem.startswith("layer ascend-ops 0.1.0 (never imports vLLM) does not satisfy ")
    assert "(the layers in that range support vLLM >=0.34,<0.35)" in problem


def test_layer_skew_without_meta_package_is_empty(monkeypatch):
    def requires_(dist):
        raise importlib.metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(importlib.metadata, "requires", requires_)
    assert version_check.declared_ranges() == {}
    assert version_check.layer_skew_problems() == []


def test_installed_checkout_is_consistent():
    # the root pyproject.toml pins every layer to >=0.2,<0.3 and every layer is 0.2.0
    ranges = version_check.declared_ranges()
    if not ranges:
        pytest.skip("meta-package vllm-ascend not installed")
    assert ranges["vllm-ascend-platform"] == "<0.3,>=0.2"
    assert version_check.layer_skew_problems() == []
