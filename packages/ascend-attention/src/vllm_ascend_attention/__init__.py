"""Ascend attention backends for vLLM (dense GQA/MQA; MLA and sparse to come).

Each backend is registered in vLLM's attention backend registry under its own
name (``AttentionBackendEnum[<name>]``) by :func:`register`, which the
meta-package's general plugin calls when the Ascend platform is current.
"""

from __future__ import annotations

__version__ = "0.1.0"

#: registry name -> qualified class path of every backend this layer provides
BACKENDS: dict[str, str] = {
    "ASCEND_ATTN": "vllm_ascend_attention.backends.dense.AscendAttentionBackend",
}

_registered = False


def register() -> None:
    """Register every backend of this layer in vLLM's backend registry (idempotent).

    Raises:
        RuntimeError: when the installed vLLM is outside the supported range.
    """
    global _registered
    if _registered:
        return
    from vllm_ascend_attention._compat import check_vllm_version

    check_vllm_version()
    from vllm.v1.attention.backends.registry import register_backend

    for name, path in BACKENDS.items():
        register_backend(name, path)
    _registered = True


def backend_path(name: str = "ASCEND_ATTN") -> str:
    """Register the backends and return the class path for ``name``."""
    register()
    return BACKENDS[name]
