# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The layer distributions the ``vllm-ascend`` meta-package declares, and which are installed.

A leaf: it reads package metadata only (``importlib.metadata``), so the layer contract (which
names an absent layer in its errors) and the version check (which compares installed versions
with the declared ranges) both build on it without importing each other.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement

META_DIST = "vllm-ascend"


@dataclass(frozen=True)
class Layer:
    """One distribution the meta-package requires (docs/architecture.md, "Layers")."""

    key: str  # short name: "ops", "platform", "attention", ...
    dist: str  # distribution name

    @property
    def folder(self) -> str:
        """Its folder under ``packages/`` in the checkout (``ascend-<key>``)."""
        return f"ascend-{self.key}"


def installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def layer_key(dist: str) -> str | None:
    """``vllm-ascend-attention`` -> ``attention``, ``ascend-ops`` -> ``ops``; None for others."""
    for prefix in ("vllm-ascend-", "ascend-"):
        if dist.startswith(prefix):
            return dist[len(prefix):]
    return None


def declared_ranges(meta_dist: str = META_DIST) -> dict[str, str]:
    """Layer distribution name -> specifier string declared by ``meta_dist`` (any extra).

    Returns an empty dict when the meta-package is not installed.
    """
    try:
        requires = importlib.metadata.requires(meta_dist) or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    ranges: dict[str, str] = {}
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = req.name.lower().replace("_", "-")
        if layer_key(name) is not None and str(req.specifier):
            ranges.setdefault(name, str(req.specifier))
    return ranges


def absent_layers(meta_dist: str = META_DIST) -> list[Layer]:
    """The layers ``meta_dist`` declares (any extra) that are not installed, in declaration order."""
    return [Layer(layer_key(dist) or dist, dist) for dist in declared_ranges(meta_dist)
            if installed_version(dist) is None]
