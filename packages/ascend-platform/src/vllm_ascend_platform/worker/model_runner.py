# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``NPUModelRunner``: vLLM's GPU model runner, run on an Ascend (or emulated) device.

We reuse ``vllm.v1.worker.gpu_model_runner.GPUModelRunner`` for everything the
scheduler contract needs (input batch, block tables, continuous batching,
chunked prefill, prefix caching, preemption, sampling) and replace the parts
that talk to a device: streams/events, synchronisation, weight-memory
accounting and, in CPU emulation, the host/device buffer pairs (which collapse
to one host tensor, as vLLM's own CPU runner does).

In simulated-NPU mode (docs/simulated-npu.md) the runner takes the NPU path:
separate host and device buffers (both CPU tensors), device synchronisation and
streams through the simulated ``torch.npu``; weights and the KV cache are
accounted on the simulated device (``ascend_ops.simulator.account_alloc``), so
``mem_get_info`` and the KV budget see them.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn
from vllm.config import VllmConfig
from vllm.logger import init_logger
from vllm.model_executor.model_loader import get_model
from vllm.v1.utils import CpuGpuBuffer
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from vllm_ascend_platform import envs
from vllm_ascend_platform.patches.registry import apply_patch, patched
from vllm_ascend_platform.worker.device_stream import device_stream_api  # noqa: F401  (re-export)
from vllm_ascend_platform.worker.lora_runner import AscendLoRARunnerMixin

logger = init_logger("vllm.ascend.model_runner")

# Tokens of the profiling pass where its size is unused (NPUModelRunner.profile_size_unused).
UNMEASURED_PROFILE_TOKENS = 16


class NPUModelRunner(AscendLoRARunnerMixin, GPUModelRunner):
    """Model runner for Ascend NPUs and for CPU emulation mode."""

    def __init__(self, vllm_config: VllmConfig, device: torch.device) -> None:
        self.emulated = envs.emulate()
        self.simulated = envs.simulate_npu()
        if self.simulated:
            from vllm_ascend_platform.host.simulated import DeviceHolding

            # what this runner holds on the simulated device, released when it is collected
            self._device_holding = DeviceHolding(self)
        with patched("device-stream-api"):
            super().__init__(vllm_config, device)
        self.sampler = self._ascend_sampler()
        if self.speculative_config is not None and hasattr(self, "rejection_sampler"):
            self.rejection_sampler = self._ascend_rejection_sampler()
        self._adopt_input_batch()

    def may_reinitialize_input_batch(self, kv_cache_config: Any) -> None:
        """vLLM's rebuild of the input batch for the KV cache's final block sizes
        (``GPUModelRunner.may_reinitialize_input_batch``); a rebuilt batch is adopted again."""
        batch = self.input_batch
        super().may_reinitialize_input_batch(kv_cache_config)
        if self.input_batch is not batch:
            self._adopt_input_batch()

    def _adopt_input_batch(self) -> None:
        """Per-step host work of the input batch: where vLLM's slot-mapping kernel is our
        override (on the host without Triton, ``triton_overrides.registered``), its block tables
        call it directly (``triton_overrides.direct_slot_mapping``); on an NPU vLLM launches its
        own kernel as before. In emulation its device buffers become their host twins."""
        from vllm_ascend_platform.host import triton_overrides

        if triton_overrides.registered():
            apply_patch("block-table-direct-slot-mapping", self.input_batch.block_table)
        if self.emulated:
            self._collapse_device_buffers()

    def _ascend_sampler(self) -> nn.Module:
        """vLLM's sampler with greedy picks through ``ascend_ops.greedy_argmax`` (sampler.py)."""
        from vllm_ascend_platform.worker.sampler import AscendSampler

        return AscendSampler.like(self.sampler)

    def _ascend_rejection_sampler(self) -> nn.Module:
        """Speculative decoding: replace vLLM's Triton RejectionSampler with the one the models
        layer publishes (role ``rejection_sampler``, same constructor and call; docs/spec-decode.md).

        Raises:
            MissingLayerError: no installed layer provides it (start-up, naming the fix).
        """
        from vllm_ascend_platform.startup import contract

        cls = contract.resolve_role("rejection_sampler", "speculative decoding (speculative_config)")
        return cls(self.sampler, self.speculative_config, self.device)

    # ---- emulation: one memory ------------------------------------------------------------
    def _collapse_device_buffers(self) -> None:
        """Point every device-side buffer at its host twin (the device *is* the host)."""
        for value in vars(self).values():
            if isinstance(value, CpuGpuBuffer):
                value.gpu = value.cpu
        batch = self.input_batch
        for name, value in list(vars(batch).items()):
            if name.endswith("_cpu_tensor") and isinstance(value, torch.Tensor):
                device_name = name[: -len("_cpu_tensor")]
                if isinstance(getattr(batch, device_name, None), torch.Tensor):
                    setattr(batch, device_name, value)
        for table in batch.block_table.block_tables:
            for value in vars(table).values():
                if isinstance(value, CpuGpuBuffer):
                    value.gpu = value.cpu

    # ---- device interaction -------------------------------------------------------------------
    def _sync_device(self) -> None:
        if not self.emulated:
            from ascend_ops import device

            device.synchronize()

    def execute_model(self, *args: Any, **kwargs: Any) -> Any:
        with patched("device-stream-api"):
            return super().execute_model(*args, **kwargs)

    def sample_tokens(self, *args: Any, **kwargs: Any) -> Any:
        with patched("device-stream-api"):
            return super().sample_tokens(*args, **kwargs)

    def _dummy_run(self, num_tokens: int, *args: Any, **kwargs: Any) -> Any:
        """vLLM's dummy forward; the profiling pass's is cut to :data:`UNMEASURED_PROFILE_TOKENS`
        when :meth:`profile_size_unused` (its size measures nothing there)."""
        if kwargs.get("is_profile") and self.profile_size_unused():
            num_tokens = min(num_tokens, UNMEASURED_PROFILE_TOKENS)
        return super()._dummy_run(num_tokens, *args, **kwargs)

    def profile_size_unused(self) -> bool:
        """True in CPU emulation with compilation off (eager): the size of vLLM's profiling
        pass (``profile_run``: a forward of ``max_num_batched_tokens`` tokens, 8192 by default, a
        large share of every engine start on a small host) measures nothing there.

        The KV budget is computed, not measured: weights counted, activations estimated
        (``NPUWorker._kv_budget``, ``activation_estimate`` in memory.py); emulation has no
        device allocator whose peak the pass could raise. vLLM's CPU backend drops the pass
        altogether in the same case (``CPUModelRunner.warming_up_model``,
        vllm/v1/worker/cpu_model_runner.py, returns when the compilation mode is NONE). We keep
        a short pass: ``GPUModelRunner._dummy_run`` (vllm/v1/worker/gpu_model_runner.py) also
        builds state that serving reads later, e.g. a later pipeline stage's
        ``intermediate_tensors`` buffers (sized ``max_num_tokens`` whatever the pass's size),
        and it still runs the model, sampler and drafter once before READY. With compilation
        on the pass is the one that traces the model at its general shape, and on the NPU and
        the simulated NPU (the NPU path, docs/simulated-npu.md) it runs as vLLM's.
        """
        from vllm.config import CompilationMode

        return self.emulated and self.compilation_config.mode == CompilationMode.NONE

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        if self.emulated:
            return sampled_token_ids.tolist()
        return super()._to_list(sampled_token_ids)

    def load_model(self, load_dummy_weights: bool = False) -> None:
        """Load weights; on the host (emulation, simulated NPU) count their bytes (no device
        allocator to ask) and, simulated, account them on the simulated device."""
        if not (self.emulated or self.simulated):
            return super().load_model(load_dummy_weights=load_dummy_weights)
        if load_dummy_weights:
            raise ValueError("Dummy-weight loading (elastic EP scale-up) is not supported on Ascend.")
        what = "simulated NPU" if self.simulated else "CPU emulation"
        logger.info("Loading model %s (%s).", self.model_config.model, what)
        self.model = get_model(vllm_config=self.vllm_config)
        self.model = self.load_lora_model(self.model, self.vllm_config, self.device) if self.lora_config else self.model
        drafter_model = self._load_drafter()
        self.model_memory_usage = _module_bytes(self.model, drafter_model)
        if self.simulated:
            self._device_holding.hold("weights", self.model_memory_usage)
        self._wrap_full_graph()
        logger.info_once(
            "Model weights take %.3f GiB of %s device memory.",
            self.model_memory_usage / (1 << 30),
            "simulated" if self.simulated else "emulated",
        )

    def initialize_kv_cache(self, kv_cache_config: Any, is_profiling: bool = False,
                            **kwargs: Any) -> None:
        """vLLM's KV-cache set-up; simulated, the allocation is accounted on the device."""
        super().initialize_kv_cache(kv_cache_config, is_profiling=is_profiling, **kwargs)
        if self.simulated and not is_profiling:
            kv_bytes = sum(int(t.size) for t in kv_cache_config.kv_cache_tensors)
            self._device_holding.hold("kv_cache", kv_bytes)

    def initialize_kv_cache_tensors(self, kv_cache_config: Any, kernel_block_sizes: list[int],
                                    kv_cache_allocation_context: Any = None) -> dict[str, torch.Tensor]:
        """vLLM's KV-cache allocation; a KV cache in host memory (CPU emulation, simulated NPU)
        is zeroed without touching its pages (host/memory.py)."""
        if self.device.type == "cpu":
            from vllm_ascend_platform.host.memory import kv_cache_allocation

            kv_cache_allocation_context = kv_cache_allocation(kv_cache_allocation_context)
        return super().initialize_kv_cache_tensors(
            kv_cache_config, kernel_block_sizes, kv_cache_allocation_context=kv_cache_allocation_context)

    def _load_drafter(self) -> nn.Module | None:
        """Speculative decoding: load the draft model and, for EAGLE-3, switch on the target's
        auxiliary hidden-state outputs, as ``GPUModelRunner.load_model`` does
        (vllm/v1/worker/gpu_model_runner.py). EAGLE/EAGLE-3/MTP drafts share the target's
        embeddings and LM head when their checkpoint has none (vLLM's proposer decides).

        Returns the draft ``nn.Module`` (for weight accounting), or None (no draft model:
        n-gram, or speculation off).
        """
        drafter = getattr(self, "drafter", None)
        if drafter is not None and hasattr(drafter, "load_model"):
            logger.info("Loading the speculative-decoding draft model (%s).",
                        self.speculative_config.method)
            drafter.load_model(self.model)
        self._setup_eagle3_aux_hidden_state_outputs()
        model = getattr(drafter, "model", None)
        return model if isinstance(model, nn.Module) else None

    def _wrap_full_graph(self) -> None:
        """FULL/FULL_DECODE_ONLY/FULL_AND_PIECEWISE: wrap the model in the static graph
        wrapper the platform names (ACLGraphWrapper), as GPUModelRunner does with
        CUDAGraphWrapper."""
        from vllm.config import CUDAGraphMode
        from vllm.platforms import current_platform
        from vllm.utils.import_utils import resolve_obj_by_qualname

        if not self.compilation_config.cudagraph_mode.has_full_cudagraphs():
            return
        wrapper_cls = resolve_obj_by_qualname(current_platform.get_static_graph_wrapper_cls())
        self.model = wrapper_cls(self.model, self.vllm_config, runtime_mode=CUDAGraphMode.FULL)

    def get_model(self) -> nn.Module:
        return self.model

    def _zero_block_ids(self, block_ids: list[int]) -> None:
        """Zero newly allocated attention blocks (stale data must not leak), in every mode,
        through the layers' backends (worker/kv_zeroing.py, shared with the MRv2 runner)."""
        from vllm_ascend_platform.worker.kv_zeroing import zero_block_ids

        zero_block_ids(self.kv_cache_config, self.compilation_config.static_forward_context,
                       block_ids)


def _module_bytes(*modules: nn.Module | None) -> int:
    """Bytes of every distinct parameter and buffer storage of ``modules`` (None skipped;
    storage shared between them, e.g. a draft model's embedding, counted once)."""
    seen: set[int] = set()
    total = 0
    tensors = [t for m in modules if m is not None for t in (*m.parameters(), *m.buffers())]
    for tensor in tensors:
        ptr = tensor.untyped_storage().data_ptr()
        if ptr in seen:
            continue
        seen.add(ptr)
        total += tensor.untyped_storage().nbytes()
    return total
