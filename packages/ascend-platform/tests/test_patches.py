"""The patch registry (DESIGN.md section 6): declared, applied once, drift detected."""

from __future__ import annotations

import pytest
from vllm_ascend_platform import patches


@pytest.fixture(autouse=True)
def empty_registry(monkeypatch):
    monkeypatch.setattr(patches, "_REGISTRY", {})
    monkeypatch.setattr(patches, "_STATE", {})
    monkeypatch.setattr(patches, "_applied_once", False)


def _patch(name, target="json:dumps", versions=">=0.32,<0.33", check=lambda obj: True, log=None):
    return patches.Patch(name=name, target=target, vllm_versions=versions, why="test",
                         check=check, apply=lambda: log.append(name) if log is not None else None)


def test_register_rejects_duplicates_and_bad_declarations():
    patches.register_patch(_patch("a"))
    with pytest.raises(ValueError, match="'a' is already registered"):
        patches.register_patch(_patch("a"))
    with pytest.raises(ValueError, match="must be 'module:attr'"):
        patches.register_patch(_patch("b", target="json.dumps"))
    with pytest.raises(ValueError):
        patches.register_patch(_patch("c", versions="not a specifier"))
    assert [p.name for p in patches.registered_patches()] == ["a"]


def test_resolve_target_walks_attributes():
    import json

    assert patches.resolve_target("json:JSONDecoder.decode") is json.JSONDecoder.decode


def test_apply_once_with_applied_skipped_drifted():
    log: list[str] = []
    patches.register_patch(_patch("in-range", log=log))
    patches.register_patch(_patch("old", versions="<0.31", log=log))
    patches.register_patch(_patch("changed", check=lambda obj: False, log=log))
    patches.register_patch(_patch("gone", target="json:no_such_symbol", log=log))
    states = {s.patch.name: s.state for s in patches.apply_patches("0.32.1.dev3+gabc")}
    assert states == {"in-range": "applied", "old": "skipped", "changed": "drifted",
                      "gone": "drifted"}
    assert log == ["in-range"]
    patches.apply_patches("0.32.1")  # once per process
    assert log == ["in-range"]
    problems = patches.drift_problems()
    assert len(problems) == 2 and any("json:no_such_symbol" in p for p in problems)


def test_statuses_without_applying():
    log: list[str] = []
    patches.register_patch(_patch("p", log=log))
    assert [s.state for s in patches.patch_statuses("0.32.0")] == ["pending"]
    assert [s.state for s in patches.patch_statuses("0.33.0")] == ["skipped"]
    assert [s.state for s in patches.patch_statuses(None)] == ["skipped"]
    assert log == []
