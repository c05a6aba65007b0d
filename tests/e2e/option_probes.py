# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A non-default value for every option the support table does not mark "not ours".

Refused rows: CLI flags (vLLM's own parser reads them) or environment settings that the sweep
expects to be refused at start-up. Supported rows run in test_option_sweep.py's engines or are
shown by the test the table cites.
"""

from __future__ import annotations

import json

#: refused engine argument -> extra CLI flags (JSON where vLLM takes a config object)
ARG_PROBES: dict[str, list[str]] = {
    "attention_backend": ["--attention-backend", "FLASH_ATTN"],
    "kv_transfer_config": ["--kv-transfer-config",
                           json.dumps({"kv_connector": "ExampleConnector", "kv_role": "kv_both"})],
    "kv_offloading_size": ["--kv-offloading-size", "1"],
    "kv_offloading_backend": ["--kv-offloading-backend", "lmcache"],
    "ec_transfer_config": ["--ec-transfer-config",
                           json.dumps({"ec_connector": "ECExampleConnector", "ec_role": "ec_both"})],
    "prefill_context_parallel_size": ["--prefill-context-parallel-size", "2"],
    "decode_context_parallel_size": ["-tp", "9", "--decode-context-parallel-size", "3"],
    "dcp_comm_backend": ["--dcp-comm-backend", "a2a"],
    "dcp_q_replicate": ["--dcp-q-replicate"],
    "dcp_kv_cache_interleave_size": ["--dcp-kv-cache-interleave-size", "2"],
    "cp_kv_cache_interleave_size": ["--cp-kv-cache-interleave-size", "2"],
    "enable_dbo": ["--enable-dbo"],
    "ubatch_size": ["--ubatch-size", "2"],
    "dbo_decode_token_threshold": ["--dbo-decode-token-threshold", "64"],
    "dbo_prefill_token_threshold": ["--dbo-prefill-token-threshold", "1024"],
    "enable_eplb": ["--enable-eplb"],
    "data_parallel_backend": ["--data-parallel-backend", "ray"],
    "eplb_config": ["--eplb-config", json.dumps({"window_size": 500})],
    "enable_elastic_ep": ["--enable-elastic-ep"],
    "expert_placement_strategy": ["--expert-placement-strategy", "round_robin"],
    "enable_ep_weight_filter": ["--enable-ep-weight-filter"],
    "moe_backend": ["--moe-backend", "triton"],
    "linear_backend": ["--linear-backend", "cutlass"],
    "sparse_indexer_topk_backend": ["--sparse-indexer-topk-backend", "deep_select"],
    "all2all_backend": ["--all2all-backend", "deepep_high_throughput"],
    "enable_hc_sp": ["--enable-hc-sp"],
    "enable_batch_sharded_sampling": ["--enable-batch-sharded-sampling"],
    "monokernel": ["--monokernel"],
    # a backend another plugin could register (vLLM 0.34 names CUDA checkpoint / CRIU as such)
    "sleep_mode_backend": ["--enable-sleep-mode", "--sleep-mode-backend", "cuda_checkpoint"],
    "cpu_offload_gb": ["--cpu-offload-gb", "1"],
    "cpu_offload_params": ["--cpu-offload-params", "lm_head"],
    "offload_backend": ["--offload-backend", "uva"],
    "offload_group_size": ["--offload-group-size", "2"],
    "offload_num_in_group": ["--offload-num-in-group", "2"],
    "offload_prefetch_step": ["--offload-prefetch-step", "2"],
    "offload_params": ["--offload-params", "lm_head"],
    "enable_cumem_allocator": ["--enable-cumem-allocator"],
    "enable_nccl_comm_suspend": ["--enable-nccl-comm-suspend"],
    "sleep_mode_offload_cudagraph": ["--enable-sleep-mode", "--sleep-mode-offload-cudagraph"],
    "enable_return_routed_experts": ["--enable-return-routed-experts"],
    "kv_sharing_fast_prefill": ["--kv-sharing-fast-prefill"],
    "kv_cache_dtype_skip_layers": ["--kv-cache-dtype-skip-layers", "0"],
    "engram_config": ["--engram-config", "{}"],
    "numa_bind": ["--numa-bind"],
    "numa_bind_nodes": ["--numa-bind", "--numa-bind-nodes", "0"],
    "numa_bind_cpus": ["--numa-bind", "--numa-bind-cpus", "0"],
    "fully_sharded_loras": ["--enable-lora", "--fully-sharded-loras"],
    "enable_mixed_moe_lora_format": ["--enable-lora", "--enable-mixed-moe-lora-format"],
    "enable_moe_shared_loras": ["--enable-lora", "--enable-moe-shared-loras"],
    "specialize_active_lora": ["--enable-lora", "--specialize-active-lora"],
    "enable_fault_tolerance": ["--enable-fault-tolerance"],
    "fault_tolerance_config": ["--fault-tolerance-config", json.dumps({"engine_recovery_timeout_sec": 7})],
    "weight_transfer_config": ["--weight-transfer-config", "{}"],
    "mamba_cache_dtype": ["--mamba-cache-dtype", "float32"],
    "mamba_ssm_cache_dtype": ["--mamba-ssm-cache-dtype", "float32"],
    "mamba_block_size": ["--mamba-block-size", "64"],
    "enable_mamba_shared_prefix_checkpoint": ["--enable-mamba-shared-prefix-checkpoint"],
    "use_replayssm": ["--use-replayssm"],
    "replayssm_buffer_len": ["--replayssm-buffer-len", "8"],
    "mamba_backend": ["--mamba-backend", "flashinfer"],
    "mamba_cache_philox_rounds": ["--mamba-cache-philox-rounds", "2"],
    "worker_cls": ["--worker-cls", "vllm.v1.worker.gpu_worker.Worker"],
    "model_impl": ["--model-impl", "transformers"],
    # vLLM 0.34 only (options/table_lines.py); the checkpoint flag needs sleep mode in vLLM's
    # own ModelConfig check, so the probe turns that on (a supported option)
    "enable_extensible_kv_cache": ["--enable-extensible-kv-cache"],
    "checkpoint_prepare_on_startup": ["--enable-sleep-mode", "--checkpoint-prepare-on-startup"],
}

#: refused engine arguments without a CLI flag -> EngineArgs field values
KWARG_PROBES: dict[str, dict] = {
    "mamba_config": {"mamba_config": {"__class__": "vllm.config.mamba.MambaConfig",
                                      "stochastic_rounding_philox_rounds": 3}},
}

#: refused environment variable -> the value the sweep sets
ENV_PROBES: dict[str, str] = {
    "VLLM_BATCH_INVARIANT": "1",
    "VLLM_KV_CACHE_LAYOUT": "HND",
    "VLLM_USE_BREAKABLE_CUDAGRAPH": "1",
    "VLLM_MOE_ROUTING_SIMULATION_STRATEGY": "uniform_random",
    "VLLM_USE_MEGA_AOT_ARTIFACT": "1",
    "VLLM_COHERE2_ATTN_MOE_DUAL_STREAM_TOKEN_THRESHOLD": "64",
    "VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS": "1",
}


class WorkerProbe:
    """test_option_sweep's ``--worker-extension-cls``: vLLM mixes it into the worker class
    (``vllm/v1/worker/worker_base.py``, WorkerWrapperBase.init_worker)."""

    def ascend_worker_mro(self) -> list[str]:
        return [c.__name__ for c in type(self).__mro__]
