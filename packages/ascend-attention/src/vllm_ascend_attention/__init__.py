# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend attention backends for vLLM: ``ASCEND_ATTN`` (dense GQA/MQA, encoder-only),
``ASCEND_MLA`` (DeepSeek multi-head latent attention) and ``ASCEND_SFA`` (DeepSeek-V3.2 sparse
MLA with its lightning indexer, docs/sparse-attention.md).

The layer describes itself to the platform in :data:`LAYER` (docs/architecture.md, "The layer
contract"): each backend is registered in vLLM's attention backend registry under its own name
(``AttentionBackendEnum[<name>]``) by :func:`register`, which the platform's layer registration
runs when the Ascend platform is current, after the one vLLM version check.
"""

from __future__ import annotations

__version__ = "0.2.0"

#: registry name -> qualified class path of every backend this layer provides
BACKENDS: dict[str, str] = {
    "ASCEND_ATTN": "vllm_ascend_attention.backends.dense.AscendAttentionBackend",
    "ASCEND_MLA": "vllm_ascend_attention.backends.mla.AscendMLABackend",
    "ASCEND_SFA": "vllm_ascend_attention.backends.sfa.AscendSFABackend",
}

#: This layer's description (docs/architecture.md, "The layer contract"); read only by the
#: platform, through the entry point ``vllm_ascend.layers: attention``.
LAYER: dict = {
    "name": "attention",
    "distribution": "vllm-ascend-attention",
    "version": __version__,
    "vllm": ">=0.34,<0.35",
    "provides": {
        "register": "vllm_ascend_attention.register",
        **{f"attention_backend.{name}": path for name, path in BACKENDS.items()},
        "attention_selector": "vllm_ascend_attention.select_backend",
        "mla_prefill_backend": "vllm_ascend_attention.backends.mla.AscendMLAPrefillBackend",
        # re-issues every captured attention call with the step's real host lengths before a
        # FULL graph replay; takes the graph layer's ``ReplayParams`` and returns the calls updated
        "graph_param_update_hook": "vllm_ascend_attention.graph_params.update_graph_params",
    },
}

_registered = False


def register() -> None:
    """Register every backend of this layer in vLLM's backend registry (idempotent).

    Called by the platform's layer registration (which holds its lock and has checked the vLLM
    version); calling it again changes nothing.
    """
    global _registered
    if _registered:
        return
    from vllm.v1.attention.backends.registry import register_backend

    from vllm_ascend_attention.mla_wrapper import register_oot

    for name, path in BACKENDS.items():
        register_backend(name, path)
    register_oot()  # the MLA wrapper whose sparse layers run our indexer
    _registered = True


def backend_path(name: str = "ASCEND_ATTN") -> str:
    """Register the backends and return the class path for ``name``."""
    register()
    return BACKENDS[name]


def select_backend(attn_selector_config, hf_config=None) -> str:
    """Backend class path for a layer: ``ASCEND_SFA`` when ``use_sparse`` (DeepSeek-V3.2 DSA,
    HF config ``index_topk``), else ``ASCEND_MLA`` when ``use_mla``, else ``ASCEND_ATTN``.

    ``attn_selector_config`` is vLLM's ``AttentionSelectorConfig`` (``use_mla``, ``use_sparse``);
    ``hf_config`` the model's HF text config. Raises NotImplementedError naming
    ``compress_ratios`` for compressed-KV models (DeepSeek-V4 style: a non-empty
    ``compress_ratios`` in the HF config), whose operators torch-npu 2.13.0 does not publish.
    """
    ratios = getattr(hf_config, "compress_ratios", None) if hf_config is not None else None
    if ratios:
        raise NotImplementedError(
            f"compressed-KV attention (HF config compress_ratios={ratios!r}, DeepSeek-V4 style) "
            "is not built for Ascend: torch-npu 2.13.0 publishes no operators for it"
        )
    if getattr(attn_selector_config, "use_sparse", False):
        return backend_path("ASCEND_SFA")
    return backend_path("ASCEND_MLA" if getattr(attn_selector_config, "use_mla", False) else "ASCEND_ATTN")

