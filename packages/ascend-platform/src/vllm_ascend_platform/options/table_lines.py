# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Support table, part 3: the rows that exist on one supported vLLM line only.

The platform supports vLLM 0.34 only (startup/version_check.py ``PLATFORM_VLLM``); the table was
written while 0.33 was supported too. The rows of options/table.py and options/table_env.py hold
on both lines except the names listed here (the ``<0.34`` ones never show on 0.34):

* :data:`LINE_GROUPS`: options vLLM 0.34.0 added (``EngineArgs`` fields in
  ``vllm/engine/arg_utils.py``, ``QUANTIZATION_METHODS`` in
  ``vllm/model_executor/layers/quantization/__init__.py``, ``envs.VLLM_*`` reads below the
  engine); each group is (vLLM specifier, kind index into ``support.KINDS``, groups shaped as in
  options/table.py);
* :data:`REMOVED`: names vLLM 0.34.0 no longer defines, whose rows in table.py / table_env.py
  therefore apply below 0.34 only.

``support.rows()`` keeps the rows of the installed vLLM's line; docs/option-support.md lists
every line's rows, each line-only row marked with its range.
"""

from __future__ import annotations

from vllm_ascend_platform.options.table import NOT_OURS, REFUSED

VLLM_034 = ">=0.34"
BELOW_034 = "<0.34"

_CUDA = "selects a CUDA/ROCm kernel, library or allocator; never consulted on the Ascend platform"
_FRONT = "front end / engine core only: tokenizer, API server, logging, metrics, scheduler"
_LOAD = "model loading on the host (vLLM's loaders, unchanged); weights reach the runner as tensors"
_VLLM = ("vLLM's own Python above the device seam (runner bookkeeping, sampler, model and "
         "distributed utilities, torch.compile front end), unchanged on Ascend")
_OFF = "tunes a feature the support table refuses (it has no effect while that feature is off)"

#: engine arguments new in vLLM 0.34
ARG_GROUPS_034: tuple[tuple[str, str, str], ...] = (
    # cache_config.enable_extensible_kv_cache: None (the default) is resolved by
    # VllmConfig._resolve_extensible_kv_cache (vllm/config/vllm.py) to False on every platform
    # that is not CUDA-alike; an explicit True raises there, before any platform hook, so the
    # early-option-refusals patch refuses it first (options/guards.py EARLY_ARGS)
    (REFUSED, "the extensible KV cache reserves the cache with CUDA virtual memory and commits "
     "pages after warm-up (vllm/v1/worker/extensible_kv_cache.py); it is not built on Ascend, "
     "where the KV budget comes from the profiled free memory: drop "
     "--enable-extensible-kv-cache (or pass --no-enable-extensible-kv-cache)",
     "enable_extensible_kv_cache"),
    (REFUSED, "process checkpoint/restore (/checkpoint/prepare, vllm/v1/engine/core.py "
     "checkpoint_prepare) releases communicator and device state for a CUDA process "
     "checkpoint; it is not built on Ascend: drop --checkpoint-prepare-on-startup",
     "checkpoint_prepare_on_startup"),
    (NOT_OURS, _FRONT, "cache_aware_admission_window cache_aware_admission_threshold"),
    (NOT_OURS, "scheduler limit on requests waiting for an asynchronous KV-connector load "
     "(vllm/v1/core/sched/scheduler.py _admits_inflight_kv_load); KV connectors are refused "
     "(--kv-transfer-config), so it never engages", "max_num_inflight_kv_loads"),
    (NOT_OURS, _LOAD, "shuffle_safetensors_files"),
)

#: quantization methods new in vLLM 0.34 (w4afp8 checkpoints; the online shorthands
#: lut_b_moe and mxfp4_hadamard32)
QUANT_GROUPS_034: tuple[tuple[str, str, str], ...] = (
    (REFUSED, "its kernels are CUDA/ROCm (INT4 experts with FP8 activations through "
     "compressed-tensors' W4A8-FP8 MoE method; online LUT / MXFP4-Hadamard MoE "
     "quantization) or fp8/fp4 tensor-core GEMMs Atlas A2/A3 lack; ascend_ops has int8 W8A8 "
     "only. Quantize the checkpoint with msModelSlim (W8A8 / W8A8_DYNAMIC) and serve it with "
     "--quantization ascend", "w4afp8 lut_b_moe mxfp4_hadamard32"),
)

#: VLLM_* variables read below the engine for the first time in vLLM 0.34
ENV_GROUPS_034: tuple[tuple[str, ...], ...] = (
    (NOT_OURS, _VLLM, "VLLM_COMPILE_ON_ONE_RANK VLLM_RELOAD_MODE"),
    (NOT_OURS, _OFF,
     "VLLM_BUILD_COMMIT VLLM_IMAGE_TAG VLLM_MOONCAKE_STORE_SELECTIVE_LEASE "
     "VLLM_FP8_MOE_REQUANT VLLM_FP8_MOE_REQUANT_ACT VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB"),
    (NOT_OURS, _CUDA,
     "VLLM_FLASHINFER_CUTEDSL_MOE_LOCALIZE_FREE_FULL_WEIGHTS "
     "VLLM_FLASHINFER_CUTEDSL_MOE_LOCALIZE_MEMSET_OVERLAP VLLM_MOE_LOCALIZE_BACKFILL "
     "VLLM_USE_LOCALITY_DOMAINS VLLM_MORI_DISPATCH_INTER_KERNEL_SWITCH_THRESHOLD "
     "VLLM_SKINNY_GEMM_MAX_WEIGHT_BYTES VLLM_USE_FUSED_MQA_TOPK"),
)

#: (vLLM specifier, kind index, groups) for every line-only addition
LINE_GROUPS: tuple[tuple[str, int, tuple[tuple[str, ...], ...]], ...] = (
    (VLLM_034, 0, ARG_GROUPS_034),
    (VLLM_034, 1, QUANT_GROUPS_034),
    (VLLM_034, 3, ENV_GROUPS_034),
)

#: (vLLM specifier, kind index, names): rows of table.py / table_env.py that apply on that line
#: only (vLLM 0.34.0 dropped the fp_quant method and VLLM_MARLIN_INPUT_DTYPE)
REMOVED: tuple[tuple[str, int, str], ...] = (
    (BELOW_034, 1, "fp_quant"),
    (BELOW_034, 3, "VLLM_MARLIN_INPUT_DTYPE"),
)


def installed_vllm() -> str | None:
    """The installed vLLM's version without importing it when it is not imported yet
    (``vllm.__version__`` if imported, else the ``vllm`` distribution's); None when absent."""
    import sys
    from importlib import metadata

    if "vllm" in sys.modules:
        return str(getattr(sys.modules["vllm"], "__version__", "")) or None
    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None
