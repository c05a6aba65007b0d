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
    "ASCEND_MLA": "vllm_ascend_attention.backends.mla.AscendMLABackend",
}

#: class path ``NPUPlatform.get_mla_prefill_backend_cls`` resolves for MLA models
MLA_PREFILL_BACKEND = "vllm_ascend_attention.backends.mla.AscendMLAPrefillBackend"

#: qualified name of the hook that re-issues every captured attention call with the step's real
#: host lengths before a FULL graph replay; the platform registers it with the graph layer
#: (``vllm_ascend_graph.params.register_param_update_hook``). It takes the graph layer's
#: ``ReplayParams`` (``batch_descriptor``, ``attn_metadata``) and returns the calls updated.
GRAPH_PARAM_UPDATE_HOOK = "vllm_ascend_attention.graph_params.update_graph_params"

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


def select_backend(attn_selector_config, hf_config=None) -> str:
    """Backend class path for a layer: ``ASCEND_MLA`` when ``use_mla``, else ``ASCEND_ATTN``.

    ``attn_selector_config`` is vLLM's ``AttentionSelectorConfig`` (``use_mla``, ``use_sparse``);
    ``hf_config`` the model's HF text config. Raises NotImplementedError naming the model feature
    for sparse MLA (``use_sparse``, DeepSeek V3.2 DSA indexer) and compressed-KV models (a non-empty
    ``compress_ratios`` in the HF config), which have no Ascend backend yet.
    """
    if getattr(attn_selector_config, "use_sparse", False):
        raise NotImplementedError(
            "sparse attention (use_sparse: DeepSeek V3.2-style DSA indexer, HF config "
            "'index_topk') is not built for Ascend yet; serve a dense-MLA or GQA model"
        )
    ratios = getattr(hf_config, "compress_ratios", None) if hf_config is not None else None
    if ratios:
        raise NotImplementedError(
            f"compressed-KV attention (HF config compress_ratios={ratios!r}) is not built for "
            "Ascend yet"
        )
    return backend_path("ASCEND_MLA" if getattr(attn_selector_config, "use_mla", False) else "ASCEND_ATTN")


def mla_prefill_backend_cls():
    """The MLA prefill-backend class (``NPUPlatform.get_mla_prefill_backend_cls`` returns it)."""
    from vllm_ascend_attention.backends.mla import AscendMLAPrefillBackend

    return AscendMLAPrefillBackend
