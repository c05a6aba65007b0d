# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The patch registry (docs/architecture.md, "Add a patch"): declared, applied once, drift detected."""

from __future__ import annotations

import pytest
from vllm_ascend_platform.patches import registry as patches


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


def _scoped(name, events, check=lambda obj: True):
    import contextlib

    @contextlib.contextmanager
    def apply():
        events.append("in")
        yield
        events.append("out")

    return patches.Patch(name=name, target="json:dumps", vllm_versions=">=0.32,<0.33", why="test",
                         check=check, apply=apply, scope="scoped", when="test")


def test_scoped_patch_is_entered_and_undone_and_never_applied_at_startup():
    events: list[str] = []
    patches.register_patch(_scoped("s", events))
    patches.apply_patches("0.32.0")
    assert events == []  # not a start-up patch
    with patches.patched("s"):
        assert events == ["in"]
    assert events == ["in", "out"]
    with pytest.raises(ValueError, match="only 'on-demand' patches"):
        patches.apply_patch("s")
    with pytest.raises(KeyError, match="no patch named 'nope'"):
        with patches.patched("nope"):
            pass


def test_drifted_scoped_patch_refuses_to_enter():
    events: list[str] = []
    patches.register_patch(_scoped("d", events, check=lambda obj: False))
    with pytest.raises(RuntimeError, match="patch d .* drifted"):
        with patches.patched("d"):
            pass
    assert events == []


def test_on_demand_patch_passes_arguments_and_reports_applied():
    seen: list[object] = []
    patches.register_patch(patches.Patch(
        name="od", target="json:dumps", vllm_versions=">=0.0", why="test", check=callable,
        apply=lambda arg: seen.append(arg) or "done", scope="on-demand", when="test"))
    assert [s.reason for s in patches.patch_statuses("0.32.0")] == ["on-demand: test"]
    assert patches.apply_patch("od", 7) == "done"
    assert seen == [7]
    (status,) = patches.patch_statuses("0.32.0")
    assert (status.state, status.reason) == ("applied", "applied 1x in this process")


def test_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="scope must be one of"):
        patches.register_patch(patches.Patch(
            name="x", target="json:dumps", vllm_versions=">=0.32", why="t",
            check=callable, apply=lambda: None, scope="sometimes"))
