# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Support table, part 2: the ``VLLM_*`` environment variables vLLM 0.34 reads below the engine.

"Below the engine" is what option_support.below_engine_env_vars() finds: names from
``vllm/envs.py`` read as ``envs.VLLM_*`` in ``vllm/v1/worker``, ``vllm/v1/attention``,
``vllm/v1/sample``, ``vllm/model_executor``, ``vllm/distributed``, ``vllm/compilation``,
``vllm/lora`` and ``vllm/_custom_ops.py``. Groups as in options/table.py; a refused variable is
refused when it is set to anything but its default (the group's ``default`` string).
"""

from __future__ import annotations

from vllm_ascend_platform.options.table import NOT_OURS, REFUSED

_CUDA = "selects a CUDA/ROCm/XPU/CPU-backend kernel, library or transport; not consulted on Ascend"
_VLLM = ("vLLM's own Python above the device seam (runner bookkeeping, sampler, model and "
         "distributed utilities, torch.compile front end), unchanged on Ascend")
_OFF = "tunes a feature the support table refuses (it has no effect while that feature is off)"

#: (status, evidence, names[, default]) groups
ENV_GROUPS: tuple[tuple[str, ...], ...] = (
    (REFUSED, "batch-invariant kernels are not built on Ascend: unset VLLM_BATCH_INVARIANT",
     "VLLM_BATCH_INVARIANT", "0"),
    (REFUSED, "the Ascend attention backends choose their own KV-cache layout: unset "
     "VLLM_KV_CACHE_LAYOUT", "VLLM_KV_CACHE_LAYOUT", ""),
    (REFUSED, "graph capture is the Ascend graph layer's (ACL graphs): unset "
     "VLLM_USE_BREAKABLE_CUDAGRAPH", "VLLM_USE_BREAKABLE_CUDAGRAPH", "0"),
    (REFUSED, "routing simulation bypasses the Ascend MoE router: unset "
     "VLLM_MOE_ROUTING_SIMULATION_STRATEGY", "VLLM_MOE_ROUTING_SIMULATION_STRATEGY", ""),
    # the graph layer sets it to 0 (and raises on an explicit 1) when it configures the compile
    # backend (vllm_ascend_graph/execution_mode.py, _keep_aot_cache_loadable; vLLM reads it in
    # vllm/envs.py use_mega_aot_artifact); this row refuses a non-0 value at start-up, also
    # under enforce_eager
    (REFUSED, "VLLM_USE_MEGA_AOT_ARTIFACT=1 needs inductor standalone-compile artifacts, which "
     "the Ascend compile backend does not produce (vllm_ascend_graph/execution_mode.py): unset "
     "VLLM_USE_MEGA_AOT_ARTIFACT or set it to 0", "VLLM_USE_MEGA_AOT_ARTIFACT", "0"),
    # new below the engine in vLLM 0.33 (vllm/envs.py): both tune CUDA / ROCm paths that never
    # run on Ascend, so a setting would silently do nothing; refused by name instead
    (REFUSED, "the Cohere2-MoE attention/MoE dual stream is CUDA-only "
     "(vllm/model_executor/models/cohere2_moe.py, _make_dual_stream); on Ascend that model runs "
     "single-stream and the threshold does nothing: unset "
     "VLLM_COHERE2_ATTN_MOE_DUAL_STREAM_TOKEN_THRESHOLD",
     "VLLM_COHERE2_ATTN_MOE_DUAL_STREAM_TOKEN_THRESHOLD", "256"),
    (REFUSED, "ROCm AITER's fused shared experts do not exist on Ascend (vLLM enables them only "
     "where AITER is available, vllm/model_executor/layers/fused_moe/utils.py "
     "resolve_layer_fused_shared_expert): unset VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS",
     "VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS", "0"),
    (NOT_OURS, _VLLM,
     "VLLM_ALLOW_INSECURE_SERIALIZATION VLLM_CACHE_ROOT VLLM_COMPUTE_NANS_IN_LOGITS "
     "VLLM_DEBUG_WORKSPACE VLLM_DISABLED_KERNELS VLLM_DISABLE_COMPILE_CACHE "
     "VLLM_DISTRIBUTED_USE_SPLIT_GROUP VLLM_ENABLE_INDUCTOR_COORDINATE_DESCENT_TUNING "
     "VLLM_ENABLE_INDUCTOR_MAX_AUTOTUNE VLLM_ENABLE_PREGRAD_PASSES VLLM_ENABLE_STARTUP_PLAN "
     "VLLM_FASTSAFETENSORS_QUEUE_SIZE VLLM_FLOAT32_MATMUL_PRECISION VLLM_FORCE_AOT_LOAD "
     "VLLM_LOG_MODEL_INSPECTION VLLM_MAX_AUDIO_DECODE_DURATION_S VLLM_MAX_BAD_WORDS_TOTAL_TOKENS "
     "VLLM_MAX_NUM_BAD_WORDS VLLM_PATTERN_MATCH_DEBUG VLLM_PP_LAYER_PARTITION "
     "VLLM_RAISE_ON_LOGIT_NANS VLLM_RANDOMIZE_DP_DUMMY_INPUTS VLLM_REPLICATE_EMBED "
     "VLLM_RINGBUFFER_WARNING_INTERVAL VLLM_RPC_BASE_PATH VLLM_TUNED_CONFIG_FOLDER "
     "VLLM_USE_AOT_COMPILE VLLM_USE_BYTECODE_HOOK VLLM_USE_HW_AGNOSTIC "
     "VLLM_USE_MODELSCOPE VLLM_USE_STANDALONE_COMPILE VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS "
     "VLLM_ADAPTIVE_VERIFICATION_PROFILE_CONTEXT_LEN VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "
     "VLLM_MOE_SKIP_PADDING"),
    (NOT_OURS, _OFF,
     "VLLM_DBO_COMM_SMS VLLM_DCP_Q_REPLICATE VLLM_USE_DIRECT_DCP_A2A VLLM_USE_DIRECT_DCP_KV_GATHER "
     "VLLM_USE_DIRECT_DCP_Q_GATHER VLLM_EC_SIDE_CHANNEL_HOST VLLM_EC_SIDE_CHANNEL_PORT "
     "VLLM_ELASTIC_EP_SCALE_UP_LAUNCH VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT "
     "VLLM_MOONCAKE_BOOTSTRAP_PORT VLLM_MOONCAKE_CONNECTOR_TIMEOUT "
     "VLLM_MOONCAKE_DISK_STAGING_USABLE_RATIO VLLM_MOONCAKE_LOAD_RECV_THREADS "
     "VLLM_MOONCAKE_STORE_TIER_LOG VLLM_NIXL_SIDE_CHANNEL_HOST VLLM_NIXL_SIDE_CHANNEL_PORT "
     "VLLM_WEIGHT_OFFLOADING_DISABLE_PIN_MEMORY VLLM_WEIGHT_OFFLOADING_DISABLE_UVA "
     "VLLM_SSM_CONV_STATE_LAYOUT VLLM_ENABLE_FLA_PACKED_RECURRENT_DECODE VLLM_GDN_DECODE_KERNEL "
     "VLLM_SPARSE_INDEXER_MAX_LOGITS_MB"),
    (NOT_OURS, _CUDA,
     "VLLM_ALLREDUCE_USE_FLASHINFER VLLM_ALLREDUCE_USE_FLASHINFER_PCIE_IPC "
     "VLLM_ALLREDUCE_USE_SYMM_MEM VLLM_B12X_MOE_FP4_FORCE_A16 VLLM_CPU_ATTN_SPLIT_KV "
     "VLLM_CPU_CI_ENV VLLM_CPU_INT4_W4A8 VLLM_CUDART_SO_PATH VLLM_DEEPEPLL_NVFP4_DISPATCH "
     "VLLM_DEEPEP_BUFFER_SIZE_MB VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE "
     "VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL VLLM_DEEPEP_V2_ALLOW_HYBRID_MODE "
     "VLLM_DEEPEP_V2_ALLOW_MULTIPLE_REDUCTION VLLM_DEEPEP_V2_PREFER_OVERLAP "
     "VLLM_DEEP_GEMM_WARMUP VLLM_DISABLE_PYNCCL VLLM_DISABLE_SHARED_EXPERTS_STREAM "
     "VLLM_ENABLE_HPC_OPS VLLM_FLASHINFER_ALLREDUCE_BACKEND VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR "
     "VLLM_FLASHINFER_AUTOTUNE_SKIP_OPS VLLM_FLASHINFER_MOE_A2A_LOW_PRECISION_COMBINE "
     "VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE VLLM_HUMMING_INPUT_QUANT_CONFIG "
     "VLLM_HUMMING_MOE_GEMM_TYPE VLLM_HUMMING_ONLINE_QUANT_CONFIG VLLM_HUMMING_USE_F16_ACCUM "
     "VLLM_LORA_DISABLE_PDL VLLM_LORA_ENABLE_DUAL_STREAM VLLM_MARLIN_INPUT_DTYPE "
     "VLLM_MARLIN_USE_ATOMIC_ADD VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE VLLM_MOE_USE_DEEP_GEMM "
     "VLLM_MXFP4_EMULATION_DEQUANT_AT_LOAD VLLM_MXFP8_EMULATION_DEQUANT_AT_LOAD "
     "VLLM_ROCM_AITER_MLA_ASM_PADDING VLLM_ROCM_FP8_MFMA_PAGE_ATTN VLLM_ROCM_FP8_PADDING "
     "VLLM_ROCM_MOE_PADDING VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16 "
     "VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB VLLM_ROCM_QUICK_REDUCE_MIN_SIZE_BYTES_MB "
     "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB "
     "VLLM_ROCM_USE_AITER VLLM_ROCM_USE_AITER_MOE VLLM_ROCM_USE_AITER_MOE_A4W4_DSV4 "
     "VLLM_ROCM_USE_SKINNY_GEMM VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD VLLM_SKIP_P2P_CHECK "
     "VLLM_TRITON_JIT_WARMUP_NUM_THREADS VLLM_TRITON_USE_TD VLLM_USE_DEEP_GEMM "
     "VLLM_USE_DEEP_GEMM_TMA_ALIGNED_SCALES VLLM_USE_FLASHINFER_MOE_INT4 "
     "VLLM_USE_FLASHINFER_SAMPLER VLLM_USE_FUSED_MOE_GROUPED_TOPK VLLM_USE_NCCL_SYMM_MEM "
     "VLLM_USE_SPINLOOP_EXT VLLM_USE_TRITON_AWQ VLLM_XPU_FORCE_N_CONTIG_WEIGHT "
     "VLLM_XPU_INC_WNA16_BACKEND VLLM_XPU_PP_MICROBATCH VLLM_XPU_USE_SAMPLER_KERNEL "
     "VLLM_ZENTORCH_WEIGHT_PREPACK"),
)
