# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``NPUWorker``: the device process vLLM's executor drives (one per NPU).

Built on ``vllm.v1.worker.gpu_worker.Worker`` (the vLLM 0.34 worker interface:
``init_device``, ``load_model``, ``determine_available_memory``,
``initialize_from_config``, ``compile_or_warm_up_model``, ``execute_model``,
``sample_tokens``); we replace device bring-up, memory accounting and warm-up. The model
runner is :class:`~vllm_ascend_platform.worker.model_runner_v2.NPUModelRunnerV2` (vLLM's Model
Runner V2, the only runner vLLM 0.34 has; docs/model-runner-v2.md).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from vllm.config import set_current_vllm_config
from vllm.logger import init_logger
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes
from vllm.v1.worker.workspace import init_workspace_manager

from vllm_ascend_platform import envs
from vllm_ascend_platform.patches.registry import patched
from vllm_ascend_platform.worker.memory import KVBudget, activation_estimate, check_kv_budget
from vllm_ascend_platform.worker.start import startup_step

logger = init_logger("vllm.ascend.worker")


class NPUWorker(Worker):
    """vLLM worker for one Ascend NPU, or for the emulated device on CPU."""

    def __init__(self, *args, **kwargs) -> None:
        if envs.host_device():
            # vLLM 0.34's Worker.__init__ refuses to start without Triton unless the platform
            # runs vLLM's standalone CPU runner (vllm/v1/worker/gpu_worker.py); on the host our
            # runner's Triton kernels are replaced (host/mrv2_kernels.py), so the gate is passed
            # for the constructor only (patch mrv2-triton-gate).
            with patched("mrv2-triton-gate"):
                super().__init__(*args, **kwargs)
        else:
            super().__init__(*args, **kwargs)

    def init_device(self) -> None:
        """Bind the device, join the distributed groups and build the model runner."""
        if envs.emulate():
            from vllm_ascend_platform.host import threads as host_threads

            self.device = torch.device("cpu")
            parallel = self.parallel_config
            host_threads.apply(self.local_rank, parallel.local_world_size,
                               parallel.distributed_executor_backend)
        elif envs.simulate_npu():
            from ascend_ops import device

            # the simulated NPU's tensors are host tensors (docs/simulated-npu.md)
            device.set_device(self.local_rank)
            self.device = torch.device("cpu")
        else:
            from ascend_ops import device

            self.device = torch.device(f"npu:{self.local_rank}")
            device.set_device(self.device)
        current_platform.check_if_supports_dtype(self.model_config.dtype)
        with startup_step(self.rank, "torch.distributed rendezvous of all ranks "
                          "(init_worker_distributed_environment)"):
            init_worker_distributed_environment(
                self.vllm_config,
                self.rank,
                self.distributed_init_method,
                self.local_rank,
                current_platform.dist_backend,
            )
        set_random_seed(self.model_config.seed)
        init_workspace_manager(self.device, 1)
        from vllm_ascend_platform.worker.model_runner_v2 import NPUModelRunnerV2

        self.model_runner = NPUModelRunnerV2(self.vllm_config, self.device)

    def _maybe_get_memory_pool_context(self, tag: str) -> contextlib.AbstractContextManager:
        # Sleep mode tags tensors after allocation instead (_tag_sleep_memory, worker/sleep_mode.py).
        return contextlib.nullcontext()

    def _tag_sleep_memory(self, tag: str) -> None:
        """Register the model's tensors ("weights") or the KV cache ("kv_cache") in
        ascend_ops' tagged memory, which the "ascend" sleep-mode backend releases."""
        if not self.model_config.enable_sleep_mode:
            return
        from ascend_ops.device.tagged_memory import default_pool, reset_default_pool

        from vllm_ascend_platform.worker import sleep_mode

        sleep_mode.register()  # also done by the general plugin; idempotent

        pool = reset_default_pool() if tag == "weights" and not getattr(
            self, "_sleep_pool_started", False) else default_pool()
        self._sleep_pool_started = True
        if tag == "weights":
            model = self.model_runner.model
            model = model.unwrap() if hasattr(model, "unwrap") else model
            tensors = [*model.parameters(), *model.buffers()]
        else:
            tensors = [t for t in self.model_runner.kv_caches if isinstance(t, torch.Tensor)]
        pool.forget(tag)
        pool.register(tag, tensors)

    def initialize_from_config(self, kv_cache_config) -> None:
        """vLLM's KV-cache allocation, then the cache is tagged for sleep mode."""
        super().initialize_from_config(kv_cache_config)
        self._tag_sleep_memory("kv_cache")

    def reload_weights(self, *args, **kwargs) -> None:
        """vLLM's in-place reload; the weights are tagged again (a reload may re-create them)."""
        super().reload_weights(*args, **kwargs)
        self._tag_sleep_memory("weights")

    def load_model(self, *, load_dummy_weights: bool = False) -> None:
        """Load weights; on the host keep its torch threads (they run the device's work)."""
        threads = torch.get_num_threads()
        super().load_model(load_dummy_weights=load_dummy_weights)
        if envs.host_device() and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        self._tag_sleep_memory("weights")

    def determine_available_memory(self) -> int:
        """Run a profiling pass, then return the KV-cache bytes the budget allows.

        Raises:
            KVBudgetError: when weights + activations + one max_model_len sequence
                do not fit (message names sizes, shortfall and the settings to change).
        """
        with set_current_vllm_config(self.vllm_config):
            self.model_runner.profile_run()
        explicit = self.cache_config.kv_cache_memory_bytes
        if explicit:
            logger.info("KV cache size set explicitly: %.3f GiB.", explicit / (1 << 30))
            return int(explicit)
        budget = self._kv_budget()
        kv_bytes = check_kv_budget(budget)
        logger.info(
            "KV cache budget: %.3f GiB of %.3f GiB device memory (weights %.3f GiB, "
            "activations %.3f GiB).",
            kv_bytes / (1 << 30),
            budget.device_memory / (1 << 30),
            budget.weights / (1 << 30),
            budget.activations / (1 << 30),
        )
        return kv_bytes

    def _kv_budget(self) -> KVBudget:
        model = self.model_config
        hf = model.hf_text_config
        dtype_bytes = torch.tensor([], dtype=model.dtype).element_size()
        specs = self.model_runner.get_kv_cache_spec()
        per_token = sum(spec.page_size_bytes // spec.block_size for spec in specs.values())
        block_size = next(iter(specs.values())).block_size if specs else self.cache_config.block_size
        sched = self.vllm_config.scheduler_config
        total = current_platform.get_device_total_memory(self.local_rank)
        weights = int(self.model_runner.model_memory_usage)
        if envs.simulate_npu():
            # what the simulated device holds (the runner accounted the weights there)
            from ascend_ops import device

            free, total = device.mem_get_info()
            weights = total - free
        return KVBudget(
            device_memory=total,
            # vLLM 0.34: None unless given; resolved_gpu_memory_utilization applies its default
            utilization=getattr(self.cache_config, "resolved_gpu_memory_utilization",
                                self.cache_config.gpu_memory_utilization),
            weights=weights,
            activations=activation_estimate(
                sched.max_num_batched_tokens,
                sched.max_num_seqs,
                getattr(hf, "hidden_size", 0),
                getattr(hf, "intermediate_size", 0) or 0,
                model.get_vocab_size(),
                dtype_bytes,
            ),
            kv_bytes_per_token=per_token,
            block_size=block_size,
            max_model_len=model.max_model_len,
        )

    def compile_or_warm_up_model(self) -> CompilationTimes:
        """Capture ACL graphs when a graph mode is on; reset the seed after profiling."""
        from vllm.config import CUDAGraphMode

        if self.compilation_config.cudagraph_mode != CUDAGraphMode.NONE:
            # the graph layer's manager captures on its own side stream (worker/mrv2_graphs.py)
            with patched("device-stream-api"):
                self.model_runner.capture_model()
        set_random_seed(self.model_config.seed)
        return CompilationTimes(
            language_model=self.compilation_config.compilation_time,
            encoder=self.compilation_config.encoder_compilation_time,
        )

    def shutdown(self) -> None:
        """vLLM's worker shutdown; simulated, also free what the runner held on the device."""
        super().shutdown()
        holding = getattr(getattr(self, "model_runner", None), "_device_holding", None)
        if holding is not None:
            holding.release()

    def sleep(self, level: int = 1) -> None:
        """vLLM's ``Worker.sleep`` (the sleep-mode backend does the work, worker/sleep_mode.py).

        vLLM checks free device memory after the backend suspended; should that check fail
        at level 1, the weights' host copies are intact, so they are brought back before the
        error is raised: the engine, which still counts itself awake, keeps serving instead of
        running over released memory. (Level 2 has dropped the weights: they stay asleep.)

        Raises ValueError for a level other than 1 or 2 before anything is released (vLLM 0.34's
        ``Worker.sleep`` would run any other level as level 1).
        """
        from vllm_ascend_platform.worker.sleep_mode import check_level

        check_level(level)
        try:
            with patched("sleep-accelerator-api"):
                super().sleep(level)
        except Exception:
            if level != 1 or self.sleep_mode_backend.state() == "RUNNING":
                raise
            logger.error("Sleep failed after the weights went to host memory; waking up "
                         "again so that the engine keeps serving.")
            self.wake_up(None)
            raise

    def wake_up(self, tags: list[str] | None = None) -> None:
        """vLLM's ``Worker.wake_up`` through the sleep-mode backend."""
        with patched("sleep-accelerator-api"):
            super().wake_up(tags)
        backend = self.sleep_mode_backend
        if getattr(backend, "graphs_dropped", False) and backend.state() == "RUNNING":
            # restored tensors moved: capture the graphs again over the new addresses
            backend.graphs_dropped = False
            _release_runner_graphs(self.model_runner)
            self.compile_or_warm_up_model()


def _release_runner_graphs(runner: Any) -> None:
    """The MRv2 runner's graph manager keeps its own table of captured FULL
    descriptors and dispatches to them while ``_graphs_captured`` is set, even after the
    sleep-mode backend dropped the graphs (``clear_all_graphs``). ``release_graphs``
    (``CudaGraphManager``, ``vllm/v1/worker/gpu/cudagraph_utils.py``; the graph layer's manager
    also forgets its FULL wrapper's graphs and replay inputs) empties that table and keeps the
    descriptors, so the next ``capture_model`` captures every one again."""
    manager = getattr(runner, "cudagraph_manager", None)
    release = getattr(manager, "release_graphs", None)
    if release is not None:
        release()


# patch: sleep-accelerator-api (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
@contextlib.contextmanager
def _accelerator_api():
    """In CPU emulation, give vLLM's sleep path the ``torch.accelerator`` calls it makes
    (synchronize, get_memory_info) over ascend_ops.device; elsewhere they exist already."""
    if not envs.emulate():
        yield
        return
    from ascend_ops import device

    acc = torch.accelerator
    saved = {n: getattr(acc, n) for n in ("synchronize", "get_memory_info", "is_available")}
    acc.synchronize = lambda *a, **k: device.synchronize()
    acc.get_memory_info = lambda *a, **k: device.mem_get_info()
    acc.is_available = lambda: False
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(acc, name, value)
