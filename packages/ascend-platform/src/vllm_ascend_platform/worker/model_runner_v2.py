# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``NPUModelRunnerV2``: vLLM 0.34's Model Runner V2 on an Ascend (or emulated) device.

PROTOTYPE for the vLLM 0.34 move (branch vllm-034; the plan is docs/model-runner-v2.md).
vLLM 0.34 deletes Model Runner V1 (``vllm/v1/worker/gpu_model_runner.py``), which our
former V1 runner subclassed; this is now the only runner. It
subclasses MRv2's ``GPUModelRunner`` (``vllm/v1/worker/gpu/model_runner.py``), as vLLM's own
``CPUModelRunner`` (``vllm/v1/worker/cpu/model_runner.py``) does, and keeps vLLM's step
untouched: the Triton kernels it launches are replaced on the host by
:mod:`vllm_ascend_platform.host.mrv2_kernels` (registered by
``NPUPlatform.register_triton_kernel_overrides``); on an NPU they would run through
triton-ascend.

What it does today: CPU emulation (``VLLM_ASCEND_EMULATE=1``) and the simulated NPU
(``VLLM_ASCEND_SIMULATE_NPU=1``: our attention backends and ops on the simulated torch_npu,
weights and KV cache accounted on the simulated device), one KV-cache group; sampling
and n-gram speculative decoding as docs/model-runner-v2.md lists.
Graph modes (PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE) through the graph layer's
ACL graph manager (``worker/mrv2_graphs.py``); speculative decoding (n-gram, EAGLE, EAGLE-3,
MTP) on the host through :mod:`vllm_ascend_platform.host.mrv2_spec_decode`; sleep mode, LoRA
and pooling. docs/model-runner-v2.md lists each feature's state.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn
from vllm.config import VllmConfig
from vllm.logger import init_logger
from vllm.v1.worker.gpu.model_runner import GPUModelRunner

from vllm_ascend_platform import envs
from vllm_ascend_platform.patches.registry import patched
from vllm_ascend_platform.worker import profiling_pass
from vllm_ascend_platform.worker.lora_runner import AscendLoRARunnerMixin

logger = init_logger("vllm.ascend.model_runner_v2")


class NPUModelRunnerV2(AscendLoRARunnerMixin, GPUModelRunner):
    """MRv2 model runner for Ascend NPUs and for CPU emulation mode (prototype)."""

    def __init__(self, vllm_config: VllmConfig, device: torch.device) -> None:
        self.emulated = envs.emulate()
        self.simulated = envs.simulate_npu()
        if self.simulated:
            from vllm_ascend_platform.host.simulated import DeviceHolding

            # what this runner holds on the simulated device (weights, KV cache), released at
            # the worker's shutdown or when the runner is collected
            self._device_holding = DeviceHolding(self)
        with patched("device-stream-api"):
            if self.device_is_host(device):
                # the speculator is built here; n-gram's refuses without Triton (see worker.py)
                with patched("mrv2-triton-gate"):
                    super().__init__(vllm_config, device)
                self._host_speculator()
            else:
                super().__init__(vllm_config, device)

    @staticmethod
    def device_is_host(device: torch.device) -> bool:
        return device.type == "cpu"

    def _host_speculator(self) -> None:
        """On the host, vLLM's n-gram speculator proposes through our torch version
        (``mrv2_kernels.ngram_propose``): its ``propose`` computes launch constants with
        ``triton.next_power_of_2``, which vLLM's Triton placeholder lacks, so the instance's
        class becomes :class:`HostNgramSpeculator` (same state, ``propose`` replaced)."""
        from vllm.v1.worker.gpu.spec_decode.ngram.speculator import NgramGPUSpeculator

        from vllm_ascend_platform.host.mrv2_spec_decode import host_draft_tokens_handler_cls

        if type(self.speculator) is NgramGPUSpeculator:
            self.speculator.__class__ = _host_ngram_cls()
        # drafts of structured-output batches: a host copy (no stream to record on)
        self.draft_tokens_handler.__class__ = host_draft_tokens_handler_cls()

    # ---- steps: vLLM's, with the CUDA stream/event API resolved to the device seam ----------
    def execute_model(self, *args: Any, **kwargs: Any) -> Any:
        with patched("device-stream-api"):
            return super().execute_model(*args, **kwargs)

    def sample_tokens(self, *args: Any, **kwargs: Any) -> Any:
        with patched("device-stream-api"):
            return super().sample_tokens(*args, **kwargs)

    def pool(self, *args: Any, **kwargs: Any) -> Any:
        """Pooling models: the worker calls ``pool`` after ``execute_model``
        (``Worker.execute_model``, vllm/v1/worker/gpu_worker.py); its ``AsyncPoolingOutput``
        takes the main and copy streams (``vllm/v1/worker/gpu/async_utils.py``)."""
        with patched("device-stream-api"):
            return super().pool(*args, **kwargs)

    def _dummy_run(self, num_tokens: int, *args: Any, **kwargs: Any) -> Any:
        """vLLM's dummy forward; the profiling pass is cut short in eager CPU emulation, where
        its size measures nothing (``worker/profiling_pass.py``)."""
        num_tokens = profiling_pass.dummy_run_tokens(
            num_tokens, kwargs.get("is_profile", False), self.emulated, self.compilation_config)
        with patched("device-stream-api"):
            return super()._dummy_run(num_tokens, *args, **kwargs)

    def profile_size_unused(self) -> bool:
        return profiling_pass.profile_size_unused(self.emulated, self.compilation_config)

    def _dummy_sampler_run(self, hidden_states: torch.Tensor) -> None:
        """vLLM's dummy sampler pass; on the host only its default pass, as vLLM does for its
        CPU platform (``GPUModelRunner._dummy_sampler_run``): the second, warmup-parameter
        pass sizes a device's fp32 sampling peak for the profiler, and our host KV budget is
        computed, not measured (``NPUWorker._kv_budget``). It would also need host stand-ins
        for every per-request logits processor at once (logit bias, bad words, min-p ...)."""
        if self.device.type != "cpu":
            return super()._dummy_sampler_run(hidden_states)
        from vllm.v1.worker.gpu.input_batch import InputBatch

        if self.model_state.dummy_sampler_run(self.sampler, hidden_states):
            return
        num_reqs = hidden_states.shape[0]
        logits = self.model.compute_logits(hidden_states)
        self.sampler(logits, InputBatch.make_dummy(num_reqs, num_reqs, self.input_buffers))

    # ---- KV cache: block-table pointer tables for the host kernels ---------------------------
    def initialize_kv_cache(self, kv_cache_config: Any, is_profiling: bool = False,
                            kv_cache_allocation_context: Any = None, **kwargs: Any) -> None:
        """vLLM's KV-cache and block-table set-up. On the host (emulation, simulated NPU) the KV
        cache is zeroed without touching its pages (``host/memory.py``), and the block tables'
        tensors are registered so the stand-ins of ``_gather_block_tables_kernel`` and
        ``_compute_slot_mappings_kernel`` (which receive uint64 pointer tables) find them;
        simulated, the KV cache is accounted on the simulated device."""
        if self.device.type == "cpu":
            from vllm_ascend_platform.host.memory import kv_cache_allocation

            kv_cache_allocation_context = kv_cache_allocation(kv_cache_allocation_context)
        from vllm_ascend_platform.worker.mrv2_graphs import graph_manager_scope

        # graph modes: the graph layer's ACL graph manager in place of vLLM's (mrv2_graphs.py)
        with patched("device-stream-api"), graph_manager_scope(self.compilation_config):
            super().initialize_kv_cache(
                kv_cache_config, is_profiling=is_profiling,
                kv_cache_allocation_context=kv_cache_allocation_context, **kwargs)
        if self.simulated and not is_profiling:
            kv_bytes = sum(int(t.size) for t in kv_cache_config.kv_cache_tensors)
            self._device_holding.hold("kv_cache", kv_bytes)
        if self.device.type == "cpu":
            from vllm_ascend_platform.host import mrv2_kernels

            tables = self.block_tables
            mrv2_kernels.register_pointers(
                [b.gpu for b in tables.block_tables] + list(tables.input_block_tables))

    def _init_kv_zero_meta(self) -> None:
        """Install the KV-block zeroer (called by vLLM's worker when the KV cache needs zeroing):
        vLLM's ``KVBlockZeroer`` is a Triton kernel over its own page layout; the Ascend
        backends zero their K/V caches themselves (worker/kv_zeroing.py)."""
        from vllm_ascend_platform.worker.kv_zeroing import BackendKVBlockZeroer

        self.kv_block_zeroer = BackendKVBlockZeroer(self)

    # ---- host modes: weights counted on the host -----------------------------------------------
    def load_model(self, *args: Any, **kwargs: Any) -> None:
        """vLLM's load; on the host (emulation, simulated NPU) the weight bytes are counted (no
        device allocator for ``DeviceMemoryProfiler`` to ask), which the KV budget reads
        (``NPUWorker._kv_budget``); simulated, they are accounted on the simulated device.
        vLLM builds its sampler here; on the host all-greedy batches are then decided on the
        host (``worker/mrv2_sampler.py``)."""
        with patched("device-stream-api"):
            super().load_model(*args, **kwargs)
        if self.device.type == "cpu":
            from vllm_ascend_platform.worker import mrv2_sampler

            mrv2_sampler.install(self)
            self.model_memory_usage = _module_bytes(self.model, self.get_draft_model())
            if self.simulated:
                self._device_holding.hold("weights", self.model_memory_usage)
            # vLLM's own "Model loading took" line measured 0 here (no device allocator);
            # the counted bytes
            logger.info_once("Model weights take %.3f GiB of %s device memory.",
                             self.model_memory_usage / (1 << 30),
                             "simulated" if self.simulated else "emulated")

    def get_model(self) -> nn.Module:
        return self.model


def _host_ngram_cls() -> type:
    from vllm.v1.worker.gpu.spec_decode.ngram.speculator import NgramGPUSpeculator

    from vllm_ascend_platform.host.mrv2_kernels import ngram_propose

    class HostNgramSpeculator(NgramGPUSpeculator):
        """vLLM's ``NgramGPUSpeculator`` with the proposal computed on the host."""

        @torch.inference_mode()
        def propose(self, input_batch: Any, attn_metadata: Any, slot_mappings: Any,
                    last_hidden_states: Any, aux_hidden_states: Any, num_sampled: torch.Tensor,
                    num_rejected: torch.Tensor, last_sampled: torch.Tensor, *args: Any,
                    dummy_run: bool = False, **kwargs: Any) -> torch.Tensor:
            num_reqs = input_batch.num_reqs
            if dummy_run:
                return self.drafts[:num_reqs]
            states = self.req_states
            return ngram_propose(states.all_token_ids.gpu, states.total_len.gpu,
                                 input_batch.idx_mapping, num_sampled, last_sampled.view(-1),
                                 self.min_n, self.max_n, self.num_speculative_steps, self.drafts)

    return HostNgramSpeculator


def _module_bytes(*modules: nn.Module | None) -> int:
    """Bytes of every distinct parameter and buffer storage of ``modules``."""
    seen: set[int] = set()
    total = 0
    for m in modules:
        if m is None:
            continue
        for t in (*m.parameters(), *m.buffers()):
            ptr = t.untyped_storage().data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                total += t.untyped_storage().nbytes()
    return total
