# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``NPUPlatform``: vLLM's out-of-tree platform for Ascend NPUs.

Three modes share this class: NPU mode (torch_npu present, device type ``npu``,
HCCL), simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``: the NPU code path over
``ascend_ops.simulator``, docs/simulated-npu.md; device tensors are CPU tensors, so
device type ``cpu`` and gloo) and CPU emulation mode (``VLLM_ASCEND_EMULATE=1``,
device type ``cpu``, gloo, emulated device memory, CPU kernels). The mode is fixed
when the module is imported, because vLLM reads ``device_type`` and friends as class
attributes; every vLLM process that resolves the platform (engine core, spawned TP
workers, Ray actors) imports this module and so sets up its own runtime here. Hooks
follow ``vllm/platforms/interface.py`` of vLLM 0.32.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import torch
from vllm.logger import init_logger
from vllm.platforms.interface import Platform, PlatformEnum

from vllm_ascend_platform import envs

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    from vllm.v1.attention.selector import AttentionSelectorConfig

logger = init_logger("vllm.ascend.platform")

MODE = envs.requested_mode() or "npu"  # "emulation" | "simulated-npu" | "npu"
EMULATED = MODE == "emulation"
SIMULATED = MODE == "simulated-npu"
#: device tensors are host (CPU) tensors: CPU emulation and simulated NPU
ON_HOST = EMULATED or SIMULATED
if EMULATED:
    from vllm_ascend_platform.patches.registry import apply_patch

    apply_patch("emulation-host-accelerator")
elif SIMULATED:  # the simulated torch_npu stands in for the real one (docs/simulated-npu.md)
    from vllm_ascend_platform.patches.registry import apply_patch

    apply_patch("simulated-npu")
else:  # NPU mode: torch_npu registers the npu device (the plugin already checked it imports)
    from ascend_ops import device as _npu_device

    _npu_device.load_npu_runtime()

# Everything from another layer comes from that layer's published description
# (vllm_ascend_platform.startup.contract; docs/architecture.md, "The layer contract").
EMULATED_SOC = "Ascend910B (emulated on CPU)"


class NPUPlatform(Platform):
    """Ascend NPU platform (NPU, simulated-NPU or CPU emulation mode)."""

    _enum = PlatformEnum.OOT
    # torch device type vLLM builds devices from; "cpu" where device tensors are host tensors
    device_name: str = "cpu" if ON_HOST else "npu"
    device_type: str = "cpu" if ON_HOST else "npu"
    # torch dispatch key of the device's tensors
    dispatch_key: str = "CPU" if ON_HOST else "PrivateUse1"
    # torch.distributed backend for the device groups (collectives on gloo off the NPU)
    dist_backend: str = "gloo" if ON_HOST else "hccl"
    # Ray resource name (Ray's Ascend accelerator); emulation uses the same resource, declared
    # on the cluster by hand: ray start --resources='{"NPU": N}' (docs/architecture.md, "Environment facts")
    ray_device_key: str = "NPU"
    # set to 1 on Ray workers: Ray then leaves ASCEND_RT_VISIBLE_DEVICES alone, as vLLM picks
    # the device by local rank (like RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES on CUDA)
    ray_noset_device_env_vars: list[str] = ["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"]
    # env var that masks visible devices
    device_control_env_var: str = "ASCEND_RT_VISIBLE_DEVICES"
    # backend for vLLM's simple (non-graph) torch.compile uses; no inductor on Ascend
    simple_compile_backend: str = "eager"
    # our own env vars, forwarded to Ray workers
    additional_env_vars: list[str] = list(envs.ENVIRONMENT_VARIABLES)
    # marks this platform for layers that check by attribute (no import needed)
    is_ascend: bool = True

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.float32, torch.bfloat16, torch.float16]

    @property
    def supported_quantization(self) -> list[str]:
        """The quantization methods our layers implement, as the models layer publishes them
        in its description (quant_methods.served; empty without the models layer). The same
        list each time: vLLM's register_quantization_config appends a plugin's method to it."""
        from vllm_ascend_platform.options.quant_methods import served

        return served()

    @classmethod
    def verify_quantization(cls, quant: str) -> None:
        """Refuse, by name and before any weight loads, a method the models layer does not
        serve (vLLM's ModelConfig calls this; the reasons per method: docs/option-support.md).

        Raises:
            ValueError: ``quant`` is not served (names the method and the fix).
            MissingLayerError: the models layer is not installed (names its extra).
        """
        from vllm_ascend_platform.options.quant_methods import served
        from vllm_ascend_platform.options.support import check_quantization

        check_quantization(quant, served(f"--quantization {quant}"))

    # ---- identity -----------------------------------------------------------------
    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        """Return the SoC name (the emulated one in emulation mode)."""
        if EMULATED:
            return EMULATED_SOC
        from ascend_ops import device

        return device.get_device_name(device_id)

    @classmethod
    def get_device_uuid(cls, device_id: int = 0) -> str:
        prefix = {"emulation": "ascend-emulated", "simulated-npu": "ascend-simulated"}
        return f"{prefix.get(MODE, 'ascend-npu')}-{device_id}"

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        """Return device memory in bytes (``VLLM_ASCEND_EMULATE_DEVICE_MEMORY`` in emulation;
        the simulated device's capacity, ``torch.npu.mem_get_info``, in simulated-NPU mode)."""
        if EMULATED:
            return envs.emulated_device_memory()
        from ascend_ops import device

        return device.mem_get_info(None if SIMULATED else device_id)[1]

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        # CPU-only torch cannot pin host memory; NPU mode pins through torch_npu.
        return not ON_HOST

    @classmethod
    def graph_pool_handle(cls) -> Any:
        """A memory-pool handle for ACL graph capture (``torch.npu.graph_pool_handle``, through
        ``ascend_ops.device``); vLLM's ``get_global_graph_pool`` calls it once per process.
        None where the device seam has no pool (capture then uses the default pool)."""
        from ascend_ops import device

        handle = getattr(device, "graph_pool_handle", None)
        return handle() if handle is not None else None

    @classmethod
    def inference_mode(cls):
        return torch.no_grad()

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        if not ON_HOST:  # simulated NPU: the worker binds its device itself (init_device)
            from ascend_ops import device as npu_device

            npu_device.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        if not EMULATED:
            from ascend_ops import device

            device.manual_seed_all(seed)

    @classmethod
    def get_current_memory_usage(cls, device: torch.types.Device | None = None) -> float:
        from ascend_ops import device as npu_device

        free, total = npu_device.mem_get_info()
        return float(total - free)

    # ---- configuration --------------------------------------------------------------
    @classmethod
    def pre_register_and_update(cls, parser: Any = None) -> None:
        """Make ``--additional-config`` parse strictly (malformed JSON fails at parse time);
        in CPU emulation, default ``--async-scheduling`` to off (``emulation_cli_defaults``)."""
        from vllm_ascend_platform.patches.registry import apply_patch
        from vllm_ascend_platform.startup.config_defaults import emulation_cli_defaults

        apply_patch("additional-config-argparse", parser)
        emulation_cli_defaults(parser)

    def is_sleep_mode_available(self) -> bool:
        """Sleep mode runs through the "ascend" sleep-mode backend (worker/sleep_mode.py)."""
        return True

    @classmethod
    def check_and_update_config(cls, vllm_config: VllmConfig) -> None:
        """Validate the config for Ascend and install our worker and defaults; with the Ray
        executor, hand our env vars to the Ray workers' runtime env (``ray_support``). An
        msModelSlim checkpoint is served with ``quantization="ascend"`` unasked (quant_detect)."""
        from vllm_ascend_platform.options.quant_compressed import check_compressed_tensors
        from vllm_ascend_platform.options.quant_detect import detect_msmodelslim
        from vllm_ascend_platform.startup.config_defaults import apply_ascend_defaults
        from vllm_ascend_platform.startup.plugin import startup_check
        from vllm_ascend_platform.worker.ray_support import forward_env_to_ray_workers
        from vllm_ascend_platform.worker.sleep_mode import select_default

        detect_msmodelslim(vllm_config)
        check_compressed_tensors(vllm_config)
        apply_ascend_defaults(cls, vllm_config, startup_check(vllm_config))
        select_default(vllm_config.model_config)
        forward_env_to_ray_workers(vllm_config.parallel_config)

    @classmethod
    def validate_environ(cls, hard_fail: bool) -> None:
        """Like vLLM's check, but knows our ``VLLM_ASCEND_*`` variables."""
        from vllm import envs as vllm_envs

        for name in os.environ:
            if (
                name.startswith("VLLM_")
                and name not in vllm_envs.environment_variables
                and name not in envs.ENVIRONMENT_VARIABLES
            ):
                if hard_fail:
                    raise ValueError(f"Unknown vLLM environment variable detected: {name}")
                logger.warning("Unknown vLLM environment variable detected: %s", name)

    @classmethod
    def check_if_supports_dtype(cls, dtype: torch.dtype) -> None:
        """Raise for dtypes neither the NPU operators nor the CPU kernels handle."""
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ValueError(
                f"dtype {dtype} is not supported on Ascend; use float32, bfloat16 or float16."
            )

    @classmethod
    def check_max_model_len(cls, max_model_len: int) -> int:
        return max_model_len

    # ---- layer hooks --------------------------------------------------------------------
    @classmethod
    def get_attn_backend_cls(
        cls,
        selected_backend: AttentionBackendEnum,
        attn_selector_config: AttentionSelectorConfig,
        num_heads: int | None = None,
    ) -> str:
        """Return our backend's class path, as the attention layer's published selector picks it."""
        from vllm_ascend_platform.startup import contract

        select = contract.resolve_role("attention_selector", "attention")
        ours = contract.roles_with_prefix("attention_backend.")
        if selected_backend is not None and selected_backend.name not in ours:
            raise ValueError(
                f"Attention backend {selected_backend.name} is not available on Ascend; "
                f"remove the attention backend override (Ascend selects {' or '.join(ours)})."
            )
        path = select(attn_selector_config, _current_hf_text_config())
        logger.info_once("Using attention backend %s.", path)
        return path

    @classmethod
    def get_mla_prefill_backend_cls(cls, mla_selector_config: Any) -> Any:
        """Return the MLA prefill backend class the attention layer publishes."""
        from vllm_ascend_platform.startup import contract

        return contract.resolve_role("mla_prefill_backend", "MLA prefill")

    @classmethod
    def use_custom_op_collectives(cls) -> bool:
        """True: TP/PP/DP collectives go through vLLM's ``torch.ops.vllm.*`` custom ops.

        Compiled graphs (ACL graph mode) then hold each collective as one opaque op that runs
        our communicator, instead of Dynamo tracing into ``torch.distributed`` calls (which gave
        wrong sums under TP=2 with graphs on). As on CUDA/XPU (vLLM 0.32 ``Platform``).
        """
        return True

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        from vllm_ascend_platform.startup import contract

        return contract.provided("device_communicator", "the device communicator")

    @classmethod
    def stateless_init_device_torch_dist_pg(
        cls,
        backend: str,
        prefix_store: Any,
        group_rank: int,
        group_size: int,
        timeout: Any,
    ) -> Any:
        """Create a device process group outside torch's global state (data parallel), with the
        function the comm layer publishes."""
        from vllm_ascend_platform.startup import contract

        create = contract.resolve_role("stateless_process_group", "stateless process groups")
        return create(backend, prefix_store, group_rank, group_size, timeout)

    @classmethod
    def get_punica_wrapper(cls) -> str:
        from vllm_ascend_platform.startup import contract

        return contract.provided("punica_wrapper", "LoRA (docs/lora.md)")

    @classmethod
    def support_static_graph_mode(cls) -> bool:
        """ACL graphs are available when an installed layer provides the graph wrapper."""
        from vllm_ascend_platform.startup import contract

        return contract.provided("static_graph_wrapper") is not None

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        from vllm_ascend_platform.startup import contract

        return contract.provided("static_graph_wrapper", "ACL graph capture")

    @classmethod
    def get_compile_backend(cls) -> str:
        from vllm_ascend_platform.startup import contract

        return contract.provided("compile_backend") or cls.simple_compile_backend

    @classmethod
    def get_pass_manager_cls(cls) -> str:
        from vllm_ascend_platform.startup import contract

        return contract.provided("pass_manager") or super().get_pass_manager_cls()

    @classmethod
    def support_hybrid_kv_cache(cls) -> bool:
        return False

    @classmethod
    def opaque_attention_op(cls) -> bool:
        return True

    @classmethod
    def use_custom_allreduce(cls) -> bool:
        return False

    @classmethod
    def import_ir_kernels(cls) -> None:
        """Import vLLM's built-in IR kernels, then register ours (the ``ir_kernels`` hook the
        models layer publishes)."""
        import vllm.kernels  # noqa: F401

        from vllm_ascend_platform.startup import contract

        contract.resolve_role("ir_kernels", "the IR-op kernels")()

    @classmethod
    def get_default_ir_op_priority(cls, vllm_config: VllmConfig) -> Any:
        """Put the ascend-models IR kernels (rms_norm, fused_add_rms_norm) first (the
        ``ir_op_priority`` function the models layer publishes)."""
        from vllm_ascend_platform.startup import contract

        return contract.resolve_role("ir_op_priority", "the IR-op priority")(vllm_config)

    @classmethod
    def import_kernels(cls) -> None:
        """vLLM's compiled kernels (``host/vllm_kernels.py``): none in a vLLM built for the empty
        target; otherwise, on the host, the CPU build this CPU runs (its ``vllm._C`` is
        AVX-512-BF16 only), and on an NPU, vLLM's rule."""
        from vllm_ascend_platform.host import vllm_kernels

        if not vllm_kernels.vllm_has_compiled_kernels():
            return
        if ON_HOST:
            vllm_kernels.import_host_kernels()
        else:
            super().import_kernels()

    @classmethod
    def register_triton_kernel_overrides(cls) -> None:
        """On the host (emulation, simulated NPU), replace vLLM's Triton input-prep kernels
        with torch versions."""
        from vllm.triton_utils import HAS_TRITON

        if ON_HOST and not HAS_TRITON:
            # Model Runner V2's kernels, speculative decoding's included (docs/model-runner-v2.md)
            from vllm_ascend_platform.host.mrv2_spec_decode import register

            register()


def _current_hf_text_config() -> Any:
    """The HF text config of the model being set up, or None outside a config context."""
    from vllm.config import get_current_vllm_config_or_none

    config = get_current_vllm_config_or_none()
    model = getattr(config, "model_config", None) if config is not None else None
    return getattr(model, "hf_text_config", None) if model is not None else None

