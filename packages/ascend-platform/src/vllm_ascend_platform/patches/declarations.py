# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Declarations of the patches whose code lives elsewhere (docs/architecture.md, "Add a patch").

Each entry names the function that makes the change by its qualified name, imported only when
the patch is applied, so importing the registry stays cheap (no model runner, no simulator).
The functions that make a change carry a ``# patch: <name>`` marker with the name used here;
the platform's source scan (``tests/test_patch_scan.py``) checks both directions.
"""

from __future__ import annotations

import importlib
from typing import Any

from vllm_ascend_platform.patches.patch import Patch

#: the supported vLLM line (startup/version_check.py, PLATFORM_VLLM)
VLLM_034 = ">=0.34,<0.35"
_DECLARED: list[Patch] = []


def _declare(patch: Patch) -> None:
    _DECLARED.append(patch)
ACCELERATOR_CALLS = ("synchronize", "get_memory_info", "empty_cache", "empty_host_cache")
CUDA_STREAM_API = ("Stream", "Event", "current_stream", "stream")


def _call(qualname: str) -> Any:
    """``module.function`` (or ``module.function`` returning a context manager), imported on the
    first call and kept (a scoped patch is entered every step)."""
    module, _, attr = qualname.rpartition(".")
    resolved: list[Any] = []

    def call(*args: Any) -> Any:
        if not resolved:
            resolved.append(getattr(importlib.import_module(module), attr))
        return resolved[0](*args)

    return call


def _has(*names: str) -> Any:
    return lambda obj: all(callable(getattr(obj, n, None)) for n in names)


def _owner(*args: Any) -> None:
    raise RuntimeError("an 'owner' patch is applied by its owner, not by the registry")


_declare(Patch(
    name="emulation-host-accelerator",
    target="torch:accelerator",
    vllm_versions=VLLM_034,
    why="CPU-only torch raises from torch.accelerator.synchronize/empty_cache/get_memory_info, "
        "which vLLM calls unconditionally; in emulation the device is the host",
    check=_has(*ACCELERATOR_CALLS),
    apply=_call("vllm_ascend_platform.host.emulation.install_host_accelerator"),
    scope="on-demand", when="CPU emulation, when the platform module is imported",
))
_declare(Patch(
    name="simulated-npu",
    target="torch:accelerator",
    vllm_versions=VLLM_034,
    why="the simulated NPU stands in for torch_npu (sys.modules['torch_npu'], torch.npu) and "
        "routes torch.accelerator calls to it (docs/simulated-npu.md)",
    check=_has(*ACCELERATOR_CALLS),
    apply=_call("vllm_ascend_platform.host.simulated.install_simulated_npu"),
    scope="on-demand", when="simulated-NPU mode, when the platform module is imported",
))
_declare(Patch(
    name="device-stream-api",
    target="torch:cuda",
    vllm_versions=VLLM_034,
    why="GPUModelRunner calls torch.cuda.Stream/Event/current_stream/stream and torch.Event "
        "directly; around our runner's calls they resolve to ascend_ops.device (and "
        "Tensor.record_stream skips host tensors: vLLM 0.34's PP relay calls it)",
    check=_has(*CUDA_STREAM_API),
    apply=_call("vllm_ascend_platform.worker.device_stream.device_stream_api"),
    scope="scoped", when="around NPUModelRunnerV2 construction, steps and graph capture",
))
_declare(Patch(
    name="sleep-accelerator-api",
    target="torch:accelerator",
    vllm_versions=VLLM_034,
    why="vLLM's sleep/wake_up path calls torch.accelerator.synchronize/get_memory_info, which "
        "CPU-only torch refuses",
    check=_has("synchronize", "get_memory_info", "is_available"),
    apply=_call("vllm_ascend_platform.worker.worker._accelerator_api"),
    scope="scoped", when="CPU emulation, around NPUWorker.sleep and wake_up",
))
_declare(Patch(
    name="additional-config-argparse",
    target="vllm.engine.arg_utils:union_dict_and_str",
    vllm_versions=VLLM_034,
    why="vLLM passes a malformed --additional-config through as a string, which fails later "
        "with an opaque validation error; the option's type becomes a strict JSON-object parser",
    check=callable,
    apply=_call("vllm_ascend_platform.startup.config.strict_additional_config_argument"),
    scope="on-demand", when="NPUPlatform.pre_register_and_update (vLLM hands us its parser)",
))
_declare(Patch(
    name="mega-aot-artifact-off",
    target="vllm.envs:environment_variables",
    vllm_versions=VLLM_034,
    why="VLLM_USE_MEGA_AOT_ARTIFACT=1 reloads inductor artifacts our compile backend never "
        "writes; the graph layer sets it to 0 unless the user set it",
    check=lambda env: "VLLM_USE_MEGA_AOT_ARTIFACT" in env,
    apply=_owner, scope="owner", when="graph layer, configuring the execution mode",
))
_declare(Patch(
    name="lora-moe-monolithic",
    target="vllm.lora.utils:_all_lora_classes",
    vllm_versions=VLLM_034,
    why="vLLM's FusedMoEWithLoRA needs a modular fused-MoE kernel; the Ascend MoE method is "
        "monolithic, so the models layer puts its own expert-LoRA class first (docs/lora.md)",
    check=lambda classes: isinstance(classes, tuple),
    apply=_owner, scope="owner",
    when="models layer, the Ascend MoE method built with LoRA enabled",
))
_declare(Patch(
    name="native-omp-wait-policy",
    target="os:environ",
    vllm_versions=VLLM_034,
    why="libgomp reads OMP_WAIT_POLICY when ascend_ops._C loads; PASSIVE keeps its idle threads "
        "off torch's cores; restored right after the import",
    check=lambda env: hasattr(env, "setdefault"),
    apply=_owner, scope="owner", when="ascend_ops, first load of the native kernels",
))
_declare(Patch(
    name="simulated-npu-capture-guard",
    target="torch:Tensor",
    vllm_versions=VLLM_034,
    why="a host sync inside simulated NPU graph capture must fail as on the device; "
        "Tensor.tolist/cpu/numpy raise while capturing (docs/simulated-npu.md)",
    check=_has("tolist", "cpu", "numpy"),
    apply=_owner, scope="owner", when="ascend_ops simulator, during graph capture",
))
_declare(Patch(
    name="demo-hub-offline",
    target="os:environ",
    vllm_versions=VLLM_034,
    why="the demo checkpoint converter must never reach a model hub (HF_HUB_OFFLINE is read "
        "when huggingface_hub is imported)",
    check=lambda env: hasattr(env, "setdefault"),
    apply=_owner, scope="owner", when="vllm_ascend.demo_model (its own process)",
))
_declare(Patch(
    name="mtp-without-layers",
    target="vllm.config.speculative:SpeculativeConfig.__post_init__",
    vllm_versions=VLLM_034,
    why="vLLM divides by the target's num_nextn_predict_layers while building SpeculativeConfig, "
        "so method mtp on a DeepSeek-V3 without MTP layers fails with ZeroDivisionError instead "
        "of an error naming the option",
    check=callable,
    apply=_call("vllm_ascend_platform.options.spec_decode.refuse_mtp_without_layers"),
    scope="startup", when="every vLLM process",
))
_declare(Patch(
    name="early-option-refusals",
    target="vllm.engine.arg_utils:EngineArgs.create_engine_config",
    vllm_versions=VLLM_034,
    why="vLLM rejects --enable-eplb, --enable-elastic-ep, --enable-cumem-allocator, "
        "--engram-config and --enable-fault-tolerance while building the sub-configs, before any "
        "platform hook, with messages that do not say what to change on Ascend; the refusal "
        "naming the option and the fix runs first (options/guards.py); in CPU emulation an unset "
        "async_scheduling becomes off there, the last point where unset and asked-for differ",
    check=callable,
    apply=_call("vllm_ascend_platform.options.guards.refuse_before_vllm"),
    scope="startup", when="every vLLM process (refuses only on the Ascend platform)",
))


_declare(Patch(
    name="lora-admission",
    target="vllm.v1.engine.input_processor:InputProcessor._validate_lora",
    vllm_versions=VLLM_034,
    why="vLLM checks a LoRA adapter only when a model step loads it, and the failing request "
        "then fails every later step, so the engine stops serving",
    check=_call("vllm_ascend_platform.options.lora_admission.looks_like_validate_lora"),
    apply=_call("vllm_ascend_platform.options.lora_admission.apply_validate_lora"),
))
_declare(Patch(
    name="lora-load-endpoint",
    target=("vllm.entrypoints.openai.models.serving:"
            "OpenAIServingModels._check_load_lora_adapter_request"),
    vllm_versions=VLLM_034,
    why="vLLM's /v1/load_lora_adapter answers a rank above max_lora_rank with a 500 and accepts "
        "an adapter of another model's shapes, which then fails a model step",
    check=_call("vllm_ascend_platform.options.lora_admission.looks_like_load_check"),
    apply=_call("vllm_ascend_platform.options.lora_admission.apply_load_check"),
))
_declare(Patch(
    name="worker-ready-timeout",
    target="vllm.v1.executor.multiproc_executor:WorkerProc.wait_for_ready",
    vllm_versions=VLLM_034,
    why="vLLM waits for the workers' READY messages without a timeout, so a worker stuck in "
        "start-up hangs the engine silently",
    check=_call("vllm_ascend_platform.worker.start.looks_like_vllm_wait_for_ready"),
    apply=_call("vllm_ascend_platform.worker.start.apply_ready_timeout"),
))
_declare(Patch(
    name="mrv2-triton-gate",
    target="vllm.v1.worker.gpu_worker:HAS_TRITON",
    vllm_versions=VLLM_034,
    why="vLLM 0.34's Worker.__init__ raises 'vLLM's model runner requires Triton' unless "
        "Platform.uses_standalone_cpu_model_runner(), which would also switch on the "
        "standalone runner's feature refusals (no speculative decoding, ...); on the host our "
        "MRv2 runner's Triton kernels are replaced (host/mrv2_kernels.py), so the worker's "
        "constructor sees HAS_TRITON=True (prototype, docs/model-runner-v2.md)",
    check=lambda value: isinstance(value, bool),
    apply=_call("vllm_ascend_platform.host.mrv2_kernels.triton_gate_open"),
    scope="scoped", when="around NPUWorker construction on vLLM 0.34 in the host modes",
))
_declare(Patch(
    name="mrv2-graph-manager",
    target="vllm.v1.worker.gpu.model_runner:ModelCudaGraphManager",
    vllm_versions=VLLM_034,
    why="Model Runner V2 builds its FULL-graph manager by this module-level name with "
        "torch.cuda graphs and no attention-parameter update before a replay; with a graph "
        "mode on, the runner builds the graph layer's ACL graph manager instead "
        "(worker/mrv2_graphs.py, docs/model-runner-v2.md)",
    check=_call("vllm_ascend_platform.worker.mrv2_graphs.is_vllm_graph_manager"),
    apply=_call("vllm_ascend_platform.worker.mrv2_graphs.graph_manager_class"),
    scope="scoped", when="around NPUModelRunnerV2.initialize_kv_cache with a graph mode on",
))
_declare(Patch(
    name="mrv2-speculator-graph-manager",
    target="vllm.v1.worker.gpu.spec_decode.autoregressive.speculator:SpeculatorCudaGraphManager",
    vllm_versions=VLLM_034,
    why="EAGLE/EAGLE-3/MTP speculators build their draft FULL-graph managers by this name (and "
        "the same name in target_dependent_ar/speculator.py) with torch.cuda graphs of the "
        "whole draft step; with a graph mode on they build the graph layer's ACL draft manager "
        "(worker/mrv2_graphs.py, docs/model-runner-v2.md)",
    check=_call("vllm_ascend_platform.worker.mrv2_graphs.is_vllm_speculator_graph_manager"),
    apply=_call("vllm_ascend_platform.worker.mrv2_graphs.speculator_graph_manager_class"),
    scope="scoped", when="around NPUModelRunnerV2.initialize_kv_cache with a graph mode on",
))

_declare(Patch(
    name="torchvision-free-processors",
    target="transformers.models.auto.video_processing_auto:AutoVideoProcessor.register",
    vllm_versions=VLLM_034,
    why="vLLM's Qwen2-VL family imports transformers' torchvision image backend and its HF "
        "processor loads a torchvision-only video processor; PyPI's torchvision does not load "
        "beside CPU torch, so when torchvision cannot be imported the image processing uses "
        "transformers' PIL backend and video input is refused by name "
        "(startup/torchvision_free.py, docs/multimodal.md)",
    check=_call("vllm_ascend_platform.startup.torchvision_free.looks_like_pil_backend"),
    apply=_call("vllm_ascend_platform.startup.torchvision_free.install_pil_processors"),
    scope="startup", when="every vLLM process; changes nothing when torchvision imports",
))

DECLARATIONS: tuple[Patch, ...] = tuple(_DECLARED)
"""Every patch the platform declares, in declaration order (the registry registers them all)."""
