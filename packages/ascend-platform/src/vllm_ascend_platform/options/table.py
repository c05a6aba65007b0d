# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The support table: every vLLM 0.34 engine argument, quantization method and KV-cache dtype.

Each group is (status, evidence, names). ``status`` is ``supported`` (evidence: the test that
shows it works), ``refused`` (evidence: what to change; our start-up check, options/support.py,
refuses a non-default value) or ``not ours`` (evidence: why the platform does not affect it).
Rendered into docs/option-support.md by ``python -m vllm_ascend_platform.options.support``;
packages/ascend-platform/tests/test_option_table.py fails when vLLM's lists and this table differ.
The ``VLLM_*`` environment variables are in options/table_env.py.
"""

from __future__ import annotations

SUPPORTED, REFUSED, NOT_OURS = "supported", "refused", "not ours"

_PARITY = "tests/e2e/test_parity.py::test_greedy_parity_8_prompts"
_FRONT = "front end / engine core only: tokenizer, API server, logging, metrics, scheduler"
_LOAD = "model loading on the host (vLLM's loaders, unchanged); weights reach the runner as tensors"
_MM = ("multimodal processing in vLLM's front end and encoder cache; the towers run on the "
       "platform's CustomOps (docs/multimodal.md)")
_SAMPLER = "vLLM's sampler and output processing, which our runner inherits unchanged"
#: --data-parallel-backend: features.REFUSALS checks it (only "mp" is built and tested)
DP_BACKEND_FIX = ("only vLLM's multiprocessing data-parallel backend is tested on Ascend "
                  "(tests/e2e/test_parallel.py::test_dp2_matches_tp1): leave "
                  "--data-parallel-backend at mp (Ray serves tensor parallelism through "
                  "--distributed-executor-backend ray)")
_CUDA = "selects a CUDA/ROCm kernel, library or allocator; never consulted on the Ascend platform"
_SWEEP = "tests/e2e/test_option_sweep.py::test_supported_group_serves_like_the_oracle"
_FP8 = "tests/e2e/test_option_sweep.py::test_fp8_kv_cache_first_tokens_match_float"
_NOEFFECT = ("no effect unless a feature this table refuses is on, or the model has layers the "
             "Ascend platform does not build (GDN/KDA linear attention, Mamba)")
#: what a refused kv_cache_dtype is told (the rule: ascend_ops/checks/kv_cache.py NPU_RULE)
KV_FIX = ("use --kv-cache-dtype auto. fp8 / fp8_e4m3 / fp8_e5m2 (and float16 / bfloat16 under a "
          "float32 model) are served in CPU emulation with the dense backend only, not with MLA "
          "models; the NPU branch keeps the cache in the model dtype, because on Atlas A2/A3 "
          "(Ascend 910B/910_93) ATB _npu_reshape_and_cache and npu_fused_infer_attention_score "
          "take float16/bfloat16 caches of the activations' dtype or int8 with antiquant scales, "
          "never float8; int8 \"C8\" caches and the other packed formats are not built")

#: engine arguments (dataclass fields of vllm.engine.arg_utils.EngineArgs = the CLI flags)
ARG_GROUPS: tuple[tuple[str, str, str], ...] = (
    (SUPPORTED, _PARITY, "model dtype max_model_len gpu_memory_utilization enforce_eager"),
    (SUPPORTED, "tests/e2e/test_per_request_seed.py::test_seed_semantics_abcd", "seed"),
    (SUPPORTED, _FP8, "kv_cache_dtype"),
    (SUPPORTED, "tests/e2e/test_graph_parity.py::test_greedy_tokens_equal_eager",
     "cudagraph_capture_sizes max_cudagraph_capture_size compilation_config"),
    (SUPPORTED, "tests/e2e/test_parallel.py::test_tp2_matches_tp1_after_hf_generate_and_in_a_second_engine",
     "tensor_parallel_size distributed_timeout_seconds cpu_distributed_timeout_seconds"),
    (SUPPORTED, "tests/e2e/test_parallel.py::test_pp2_matches_tp1", "pipeline_parallel_size"),
    (SUPPORTED, "tests/e2e/test_parallel.py::test_dp2_matches_tp1",
     "data_parallel_size dp_sync_interval"),
    (NOT_OURS, "read only with --nnodes > 1, where they address the torch.distributed rendezvous "
     "store of every node (vllm/distributed/parallel_state.py init_distributed_environment); "
     "device-independent, and the single-node engines here never consult them",
     "master_addr master_port"),
    (REFUSED, DP_BACKEND_FIX, "data_parallel_backend"),
    (SUPPORTED, "tests/e2e/test_parallel.py::test_ep2_matches_ep1", "enable_expert_parallel"),
    (SUPPORTED, "tests/e2e/test_parallel.py::test_ray_tp2_matches_tp1", "distributed_executor_backend"),
    (SUPPORTED, "tests/e2e/test_prefix_cache_hits.py::test_block_size_is_the_requested_one",
     "block_size"),
    (SUPPORTED, "tests/e2e/test_prefix_caching_chunked_prefill.py::test_greedy_tokens_identical_across_matrix",
     "enable_prefix_caching enable_chunked_prefill max_num_batched_tokens max_num_seqs"),
    (SUPPORTED, "tests/e2e/test_logprobs.py::test_logprobs_finite_sorted_complete",
     "max_logprobs"),
    (SUPPORTED, "tests/e2e/test_quant_w8a8_dynamic.py::test_first_token_logprobs_equal_the_oracle", "quantization"),
    (SUPPORTED, "tests/e2e/test_lora.py::test_one_adapter_equals_hf_merged",
     "enable_lora max_loras max_lora_rank max_cpu_loras lora_dtype lora_target_modules"),
    (SUPPORTED, "tests/e2e/test_sleep_mode.py::test_level2_selective_wake_and_reload",
     "enable_sleep_mode sleep_preserve_parameter_names"),
    (SUPPORTED, "tests/e2e/test_server.py::test_watchdog_runs_in_the_engine_core",
     "watchdog_config"),
    (SUPPORTED, "tests/e2e/test_server.py::test_upstream_additional_config_keys_start_and_unsupported_value_warns",
     "additional_config"),
    (SUPPORTED, "tests/e2e/test_pooling_minilm.py::test_embeddings_match_transformers",
     "runner convert pooler_config"),
    (SUPPORTED, "tests/e2e/test_sampling_controls.py::test_structured_outputs_mixed_batch",
     "structured_outputs_config"),
    (SUPPORTED, "tests/e2e/test_kv_budget.py::test_one_sequence_does_not_fit",
     "num_gpu_blocks_override"),
    (SUPPORTED, _SWEEP,
     "kv_cache_memory_bytes async_scheduling scheduling_policy long_prefill_token_threshold "
     "max_num_scheduled_tokens max_num_active_seqs stream_interval optimization_level "
     "performance_mode disable_sliding_window disable_cascade_attn prefix_caching_hash_algo "
     "language_model_only max_parallel_loading_workers kernel_config ir_op_priority "
     "worker_extension_cls enable_prompt_embeds"),
    (REFUSED, "pass --attention-backend ASCEND_ATTN, ASCEND_MLA or ASCEND_SFA (DeepSeek-V3.2 sparse "
     "MLA, docs/sparse-attention.md), or leave it unset",
     "attention_backend"),
    (SUPPORTED, "tests/e2e/test_pd_disaggregation.py::test_consumer_reuses_producer_blocks_same_tokens",
     "kv_transfer_config"),
    (REFUSED, "KV offloading is not wired to the Ascend KV layout yet (vLLM's OffloadingConnector "
     "copies vLLM's page layout with CUDA kernels): drop --kv-offloading-size / "
     "--kv-offloading-backend", "kv_offloading_size kv_offloading_backend"),
    (REFUSED, "drop --ec-transfer-config / ec_transfer_config", "ec_transfer_config"),
    (REFUSED, "context parallelism is not built: leave --prefill-context-parallel-size and "
     "--decode-context-parallel-size at 1",
     "prefill_context_parallel_size decode_context_parallel_size dcp_comm_backend "
     "dcp_q_replicate dcp_kv_cache_interleave_size cp_kv_cache_interleave_size"),
    (REFUSED, "dual-batch overlap is not built: drop --enable-dbo / --ubatch-size",
     "enable_dbo ubatch_size dbo_decode_token_threshold dbo_prefill_token_threshold"),
    # vLLM rejects the next five itself while building the config, without saying what to
    # change; options/guards.py (patch early-option-refusals) checks them first with these texts
    (REFUSED, "expert-parallel load balancing is not built on Ascend (vLLM builds it for "
     "CUDA only): drop --enable-eplb", "enable_eplb"),
    (REFUSED, "elastic expert parallelism needs expert-parallel load balancing, which is not "
     "built on Ascend: drop --enable-elastic-ep", "enable_elastic_ep"),
    (REFUSED, "the CUDA cumem allocator does not exist on Ascend: drop --enable-cumem-allocator "
     "(sleep mode needs no flag beyond --enable-sleep-mode: the Ascend sleep-mode allocator)",
     "enable_cumem_allocator"),
    (REFUSED, "Engram n-gram embedding tables are not built on Ascend (no served model has "
     "them): drop --engram-config", "engram_config"),
    (REFUSED, "engine fault tolerance (sentinels, engine recovery) is not built on Ascend: drop "
     "--enable-fault-tolerance / --fault-tolerance-config", "enable_fault_tolerance"),
    (REFUSED, "expert-parallel load balancing is not built: drop --enable-eplb / --eplb-config "
     "/ --expert-placement-strategy", "eplb_config expert_placement_strategy "
     "enable_ep_weight_filter"),
    (NOT_OURS, _NOEFFECT, "elastic_ep_max_dp_size gdn_prefill_backend kda_prefill_backend "
     "kda_decode_backend mamba_ssu_algorithm enable_mamba_cache_stochastic_rounding"),
    (REFUSED, "Ascend selects its own kernels and collectives: leave the option at its default",
     "moe_backend linear_backend sparse_indexer_topk_backend all2all_backend enable_hc_sp "
     "enable_batch_sharded_sampling"),
    (REFUSED, "--monokernel selects vLLM's DeepSeek-V4.1 mono decode kernels for ROCm gfx942 "
     "GPUs (vllm/models/deepseek_v41/amd/mono_decode.py); Ascend runs its own kernels: drop "
     "--monokernel", "monokernel"),
    # vLLM 0.34 puts the sleep-mode backend on the command line (ModelConfig.sleep_mode_backend,
    # vllm/device_allocator/sleep_mode_backend.py); the platform runs vLLM's default "cumem" as
    # its own "ascend" backend (sleep_mode.select_default), any other name would fail only at
    # the first sleep
    (REFUSED, "the Ascend platform frees and restores device memory through its own sleep-mode "
     "backend (vllm_ascend_platform/worker/sleep_mode.py): leave --sleep-mode-backend at cumem "
     "(vLLM's default, which runs as ascend) or pass ascend", "sleep_mode_backend"),
    (REFUSED, "weight/KV offloading to host memory is not built: drop the offload options",
     "cpu_offload_gb cpu_offload_params offload_backend offload_group_size offload_num_in_group "
     "offload_prefetch_step offload_params"),
    (REFUSED, "CUDA allocator / NCCL features: drop the option (Ascend has its own sleep-mode "
     "allocator, --enable-sleep-mode)",
     "enable_nccl_comm_suspend sleep_mode_offload_cudagraph"),
    (REFUSED, "not built on Ascend: drop the option", "enable_return_routed_experts "
     "kv_sharing_fast_prefill kv_cache_dtype_skip_layers numa_bind numa_bind_nodes "
     "numa_bind_cpus fully_sharded_loras enable_mixed_moe_lora_format enable_moe_shared_loras "
     "specialize_active_lora fault_tolerance_config weight_transfer_config"),
    (REFUSED, "Mamba / linear-attention state caches are not built on Ascend: drop the option",
     "mamba_cache_dtype mamba_ssm_cache_dtype mamba_block_size "
     "enable_mamba_shared_prefix_checkpoint use_replayssm replayssm_buffer_len mamba_backend "
     "mamba_cache_philox_rounds mamba_config"),
    (NOT_OURS, "deprecated in vLLM 0.33 and without effect: the Mamba cache mode follows "
     "--enable-prefix-caching (vllm/engine/arg_utils.py, _MAMBA_CACHE_MODE_DEPRECATION_MESSAGE), "
     "and the Mamba state caches it shaped are refused above", "mamba_cache_mode"),
    (REFUSED, "the Ascend platform installs its own worker: leave --worker-cls at auto",
     "worker_cls"),
    (REFUSED, "only vLLM's own model classes run through the Ascend layers: leave --model-impl "
     "at auto or vllm", "model_impl"),
    (NOT_OURS, _FRONT,
     "served_model_name tokenizer hf_config_path skip_tokenizer_init tokenizer_mode "
     "trust_remote_code config_format revision code_revision hf_token tokenizer_revision "
     "disable_log_stats aggregate_engine_logging show_hidden_metrics_for_version "
     "otlp_traces_endpoint collect_detailed_traces per_request_spec_decode_metrics "
     "kv_cache_metrics kv_cache_metrics_sample custom_histogram_buckets cudagraph_metrics "
     "enable_mfu_metrics enable_logging_iteration_details logging_config log_level "
     "log_config_file generation_config override_generation_config reasoning_parser "
     "reasoning_parser_plugin reasoning_config io_processor_plugin renderer_num_workers "
     "_api_process_count _api_process_rank tokens_only max_num_queued_reqs "
     "max_num_queued_tokens scheduler_reserve_full_isl prefill_schedule_interval watermark "
     "watermark_config long_prefill_token_threshold_adaptive scheduler_cls "
     "data_parallel_rank data_parallel_start_rank data_parallel_size_local "
     "data_parallel_address data_parallel_rpc_port data_parallel_hybrid_lb "
     "data_parallel_external_lb data_parallel_multi_port_external_lb nnodes node_rank "
     "shutdown_timeout enable_trace_replay kv_events_config ec_manager_config "
     "fail_on_environ_validation jit_monitor_mode jit_monitor_verbose profiler_config "
     "disable_hybrid_kv_cache_manager prefix_cache_retention_interval "
     "allow_deprecated_quantization diffusion_config aux_output_config swa_bounded_replay "
     "prefix_match_unit ray_workers_use_nsight device_ids"),
    (NOT_OURS, _LOAD,
     "model_weights download_dir safetensors_load_strategy safetensors_prefetch_num_threads "
     "safetensors_prefetch_block_size load_format hf_overrides model_class_overrides "
     "quantization_config model_loader_extra_config ignore_patterns use_tqdm_on_load "
     "pt_load_map_location"),
    (NOT_OURS, _MM,
     "allowed_local_media_path allowed_media_domains limit_mm_per_prompt enable_mm_embeds "
     "interleave_mm_strings media_io_kwargs mm_processor_kwargs mm_processor_cache_gb "
     "mm_processor_cache_type mm_hasher_algorithm mm_shm_cache_max_object_size_mb "
     "mm_encoder_only mm_encoder_tp_mode mm_encoder_attn_backend mm_encoder_attn_dtype "
     "mm_encoder_fp8_scale_path mm_encoder_fp8_scale_save_path mm_encoder_fp8_scale_save_margin "
     "skip_mm_profiling video_pruning_rate video_pruning_method mm_tensor_ipc "
     "mm_processor_device mm_ipc_gpu_memory_gb mm_device_do_normalize disable_chunked_mm_input "
     "default_mm_loras enable_tower_connector_lora max_lora_cls_labels"),
    (NOT_OURS, _SAMPLER,
     "logprobs_mode use_fp64_gumbel return_sampling_mask logits_processors"),
    (NOT_OURS, _CUDA,
     "disable_custom_all_reduce enable_shm_tensor_arena enable_flashinfer_autotune "
     "enable_layerwise_nvtx_tracing enable_mm_processor_stats attention_config "
     "disable_nccl_for_dp_synchronization"),
    (SUPPORTED, "tests/e2e/test_spec_decode_ngram.py::"
     "test_greedy_equals_no_speculation_and_drafts_are_accepted",
     "speculative_config spec_method spec_model spec_tokens"),
)

#: quantization methods (vllm.model_executor.layers.quantization.QUANTIZATION_METHODS). The
#: checks read NPUPlatform.supported_quantization, so a method the models layer adds there is
#: served even before this table names it (the table test then asks for its row).
QUANT_GROUPS: tuple[tuple[str, str, str], ...] = (
    (SUPPORTED, "tests/e2e/test_quant_w8a8_dynamic.py::test_first_token_logprobs_equal_the_oracle", "ascend"),
    (SUPPORTED, "tests/e2e/test_quant_compressed_int8.py::test_tokens_agree_with_the_oracle",
     "compressed-tensors"),
    (REFUSED, "its kernels are CUDA/ROCm/XPU (Marlin, CUTLASS, FlashInfer, Triton, DeepGEMM) or "
     "fp8/fp4 tensor-core GEMMs Atlas A2/A3 lack; ascend_ops has int8 W8A8 only. Quantize the "
     "checkpoint with msModelSlim (W8A8 / W8A8_DYNAMIC) and serve it with --quantization ascend",
     "awq auto_awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed "
     "auto_gptq gptq gptq_marlin awq_marlin humming quark "
     "moe_wna16 torchao inc mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor "
     "fp8_per_block fp8_per_channel nvfp4_per_token mxfp8"),
    (REFUSED, "online int8 quantization is not built on Ascend: experts_int8 / "
     "int8_per_channel_weight_only quantize the MoE expert weights to int8 weight-only as they "
     "load and run them through vLLM's Triton / Humming / CPU int8 MoE kernels "
     "(vllm/model_executor/layers/fused_moe/oracle/int8.py), none of which runs on Ascend, and "
     "the Ascend MoE method has no int8 weight-only path. Quantize offline instead: msModelSlim "
     "W8A8 / W8A8_DYNAMIC served with --quantization ascend, or a compressed-tensors int8 W8A8 "
     "checkpoint (--quantization compressed-tensors)",
     "experts_int8 int8_per_channel_weight_only"),
)

#: --kv-cache-dtype choices (the CacheDType literal of vllm/config/cache.py)
KV_GROUPS: tuple[tuple[str, str, str], ...] = (
    (SUPPORTED, _FP8, "auto fp8 fp8_e4m3 fp8_e5m2"),
    (SUPPORTED, "packages/ascend-ops/tests/test_kv_quant.py::test_attention_reads_dequantized_cache",
     "float16 bfloat16"),
    (REFUSED, KV_FIX,
     "fp8_inc fp8_ds_mla nvfp4_ds_mla turboquant_k8v4 turboquant_4bit_nc turboquant_k3v4_nc "
     "turboquant_3bit_nc octave_k3v4 octave_k3v3 octave_k3v3_compact ultraquant_4bit "
     "int4_per_token_head int8_per_token_head fp8_per_token_head nvfp4 nvfp4_4over6"),
)
