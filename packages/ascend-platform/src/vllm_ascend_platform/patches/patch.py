# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""One declared runtime change: the :class:`Patch` record the registry and the declarations share.

A leaf module: it imports nothing of ours, so the declarations (data) and the registry (which
applies them) both import it and neither imports the other's users (docs/architecture.md, "Add a
patch").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SCOPES = ("startup", "on-demand", "scoped", "owner")


@dataclass(frozen=True)
class Patch:
    """One declared patch of a vLLM symbol.

    Attributes:
        name: short unique id, e.g. ``"sampler-cpu-path"``.
        target: the patched symbol as ``"module:attr.path"`` (``"vllm.x.y:Class.method"``).
        vllm_versions: PEP 440 specifier of vLLM versions it was written for (``">=0.34,<0.35"``).
        why: one sentence on why upstream cannot be used as is.
        check: called with the current target object; True when it still looks as expected.
        apply: installs the patch. ``"startup"``: called once with no argument;
            ``"on-demand"``: called with :func:`apply_patch`'s arguments; ``"scoped"``: returns
            a context manager that installs the change on entry and undoes it on exit;
            ``"owner"``: not called by the registry (its owner applies it).
        scope: ``"startup"`` (default), ``"on-demand"``, ``"scoped"`` or ``"owner"`` (module
            docstring).
        when: for doctor, the condition under which it is applied (``"CPU emulation only"``).
    """

    name: str
    target: str
    vllm_versions: str
    why: str
    check: Callable[[Any], bool]
    apply: Callable[..., Any]
    scope: str = "startup"
    when: str = "every vLLM process"
