# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""What ``NPUPlatform.check_and_update_config`` does to a vLLM config.

Order: front-door checks (version, plugin state, refused features, typed
``additional_config``), then our worker, scheduling and execution-mode defaults.
Every change that alters user-visible behaviour is logged once.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from vllm.logger import init_logger

from vllm_ascend_platform import envs

if TYPE_CHECKING:
    from vllm.config import VllmConfig

    from vllm_ascend_platform.startup.config import AscendConfig

logger = init_logger("vllm.ascend.config")

def apply_ascend_defaults(platform_cls: type, vllm_config: VllmConfig,
                          ascend_config: AscendConfig) -> None:
    """Fill in our defaults on ``vllm_config`` (in place), once the front-door checks
    (``startup.plugin.startup_check``, which returned ``ascend_config``) have passed.

    Raises:
        RuntimeError / ValueError: from the checks made here, naming what to change.
    """
    if envs.simulate_npu():
        check_simulated_dtype(vllm_config)
    _check_block_size(vllm_config)
    _install_worker(vllm_config)
    _worker_start_method()
    _scheduling(vllm_config)
    _eager_when_no_graphs(vllm_config)
    _configure_layers(vllm_config, ascend_config)
    _kv_connector(vllm_config)
    _log_startup_line(platform_cls, vllm_config)


def check_simulated_dtype(vllm_config: VllmConfig) -> None:
    """Refuse a model dtype the torch_npu operators reject (simulated-NPU mode).

    ``npu_fused_infer_attention_score``, ``npu_rms_norm`` and the other operators take
    float16 / bfloat16 activations; the simulator enforces the same rule
    (docs/simulated-npu.md), so a float32 model would fail on its first forward pass. Stop at
    start-up instead.

    Raises:
        ValueError: naming the dtype and the flags that fix it.
    """
    import torch

    model = vllm_config.model_config
    if model is not None and model.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(
            f"simulated-NPU mode (VLLM_ASCEND_SIMULATE_NPU=1) runs the torch_npu operators, "
            f"which do not accept model dtype {model.dtype}; start with --dtype float16 or "
            "--dtype bfloat16 (LLM(dtype='float16')), or use CPU emulation "
            "(VLLM_ASCEND_EMULATE=1) for float32."
        )


def _check_block_size(vllm_config: VllmConfig) -> None:
    """Refuse a user ``--block-size`` the model's Ascend attention backend cannot page with.

    vLLM 0.32 matches the KV manager's block size against the backends'
    ``get_supported_kernel_block_sizes()`` only when it allocates the KV cache
    (``select_common_block_size`` in ``vllm/v1/worker/utils.py``), after the weights are
    loaded; this applies the same rule at config time. A size fits when it is a multiple of
    one entry (an int ``k``: kernel blocks of ``k`` tile it; ``MultipleOf(m)``: it is a
    multiple of ``m``). The backend is the one ``NPUPlatform.get_attn_backend_cls`` picks
    (ASCEND_MLA for MLA models, else ASCEND_ATTN), named through the attention layer.

    Raises:
        ValueError: naming the flag, the backend, its granularity and a size that fits.
    """
    cache, model = vllm_config.cache_config, vllm_config.model_config
    if model is None or not getattr(cache, "user_specified_block_size", False):
        return
    from vllm.utils.import_utils import resolve_obj_by_qualname
    from vllm.v1.attention.backend import MultipleOf

    from vllm_ascend_platform.startup import contract

    select = contract.resolve_role("attention_selector", "attention")
    path = select(SimpleNamespace(use_mla=getattr(model, "use_mla", False), use_sparse=False))
    backend = resolve_obj_by_qualname(path)
    name = backend.get_name()
    units = [s.base if isinstance(s, MultipleOf) else int(s)
             for s in backend.get_supported_kernel_block_sizes()]
    block_size = cache.block_size
    if not units or any(block_size % unit == 0 for unit in units):
        return
    unit = min(units)
    suggested = -(-block_size // unit) * unit
    default = backend.get_preferred_block_size(cache.DEFAULT_BLOCK_SIZE)  # used without the flag
    raise ValueError(
        f"--block-size {block_size} does not fit the Ascend attention backend {name}, which "
        f"pages the KV cache in blocks of a multiple of {' or '.join(map(str, units))} tokens; "
        f"use e.g. --block-size {suggested} (the default is {default})."
    )


def _install_worker(vllm_config: VllmConfig) -> None:
    parallel = vllm_config.parallel_config
    if parallel.worker_cls == "auto":
        parallel.worker_cls = "vllm_ascend_platform.worker.worker.NPUWorker"
    # --enable-dbo never reaches here: startup_check refuses it by name (options/table.py).


def _worker_start_method() -> None:
    """Engine-core, worker and DP processes start with spawn, never fork (vLLM's CPU/XPU
    platforms do the same; why: ``worker_start`` and docs/worker-start.md)."""
    from vllm_ascend_platform.worker.start import choose_worker_start_method

    choose_worker_start_method()


def _scheduling(vllm_config: VllmConfig) -> None:
    """Async scheduling (vLLM 0.32's default) is supported: the runner routes its
    stream/event calls through ``ascend_ops.device``. Logged once for visibility."""
    logger.info_once(
        "Async scheduling is %s.",
        "on" if vllm_config.scheduler_config.async_scheduling else "off",
    )


def emulation_cli_defaults(parser: Any) -> None:
    """CPU emulation, command line (the OpenAI server, ``vllm serve``): async scheduling
    defaults to off, as vLLM's CPU platform sets it (``check_and_update_config`` in
    ``vllm/platforms/cpu.py``: "async scheduling is not required on CPU"); an explicit
    ``--async-scheduling`` still turns it on. The emulated device runs each step in the engine
    core's own thread, so the scheduler's one-step lookahead overlaps nothing and only delays
    every token's delivery by a step (``benchmarks/serve_bench.py``, ``ours-sync`` side, see
    ``benchmarks/README.md``). NPU and simulated NPU: unchanged (vLLM's default, on)."""
    if parser is None or not envs.emulate():
        return
    parser.set_defaults(async_scheduling=False)


def emulation_engine_defaults(engine_args: Any) -> None:
    """CPU emulation, every front end (``LLM(...)`` too, which has no parser): an
    ``async_scheduling`` left unset (None, which ``VllmConfig`` would resolve to on) becomes off,
    as :func:`emulation_cli_defaults` makes it on the command line; an explicit True is kept.
    With the engine core in its own process (vLLM's default), async scheduling's output thread
    competes with the kernels' threads for the host's cores and made decode steps slower
    (benchmarks/README.md, "Design measurements behind the platform"). Runs from
    ``EngineArgs.create_engine_config`` (the ``early-option-refusals`` wrapper, options/guards.py),
    the last point where "unset" and "asked for" still differ."""
    if envs.emulate() and getattr(engine_args, "async_scheduling", False) is None:
        engine_args.async_scheduling = False


def _eager_when_no_graphs(vllm_config: VllmConfig) -> None:
    """The one eager setting: no compilation, no graph capture.

    Applied when the model asks for it (``enforce_eager``), when no installed layer provides ACL
    graph capture (``static_graph_wrapper``; then said once), or for a sparse-attention model
    (HF config ``index_topk``, DeepSeek-V3.2 DSA; said once, naming the reason): its indexer op
    (``vllm::ascend_sparse_indexer``) slices the step's requests and rows on the host and is not
    one of vLLM's splitting ops, so a captured graph (PIECEWISE included, which vLLM does not
    check against the backend's ``AttentionCGSupport.NEVER``) would replay the capture's slices;
    no per-replay update for it is built (docs/sparse-attention.md). Otherwise the graph layer's
    ``configure`` hook decides the graph and compile settings.
    """
    from vllm.config import CompilationMode, CUDAGraphMode

    from vllm_ascend_platform.startup import contract

    model = vllm_config.model_config
    graphs = contract.provided("static_graph_wrapper") is not None
    sparse = model is not None and hasattr(model.hf_text_config, "index_topk")
    if graphs and model is not None and not model.enforce_eager and not sparse:
        return
    if sparse and model is not None and not model.enforce_eager:
        logger.warning_once(
            "sparse attention (HF config index_topk, DeepSeek-V3.2 DSA, backend ASCEND_SFA) "
            "runs eager on Ascend: no compilation, no ACL graphs, whatever cudagraph_mode asks, "
            "because its indexer op is not a graph splitting op and has no per-replay update "
            "(docs/sparse-attention.md)")
    if not graphs and model is not None and not model.enforce_eager:
        logger.warning_once(
            "ACL graph capture and the Ascend compile backend are not installed "
            "(vllm-ascend-graph): running eager."
        )
    comp = vllm_config.compilation_config
    comp.mode = CompilationMode.NONE
    comp.cudagraph_mode = CUDAGraphMode.NONE
    comp.cudagraph_capture_sizes = []
    comp.max_cudagraph_capture_size = 0
    if model is not None:
        model.enforce_eager = True


def _configure_layers(vllm_config: VllmConfig, ascend_config: AscendConfig) -> None:
    """Hand each installed layer its typed options section through its ``configure`` hook
    (docs/architecture.md, "The layer contract"): graph and compile settings (graph layer),
    the CustomOps kept enabled (models layer)."""
    from vllm_ascend_platform.startup import contract
    from vllm_ascend_platform.startup.config import layer_sections

    sections = layer_sections(ascend_config)
    for desc in contract.installed_layers():
        if "configure" in desc.provides:
            contract.resolve(desc.provides["configure"])(vllm_config, sections[desc.name])


def _kv_connector(vllm_config: VllmConfig) -> None:
    """A served KV connector runs as its Ascend class (options/kv_connectors.py)."""
    from vllm_ascend_platform.options.kv_connectors import route_served_connector

    route_served_connector(vllm_config)


def _log_startup_line(platform_cls: Any, vllm_config: VllmConfig) -> None:
    import torch
    import vllm

    from vllm_ascend_platform.host import kernel_report
    from vllm_ascend_platform.startup.version_check import layer_statuses

    layers = ", ".join(f"{s.layer.dist} {s.version or 'absent'}" for s in layer_statuses())
    mode = {"emulation": "CPU emulation", "simulated-npu": "simulated NPU"}.get(
        envs.requested_mode() or "", "NPU")
    logger.info_once(
        "vllm-ascend: mode=%s device=%s vllm=%s torch=%s torch_npu=%s layers: %s; "
        "kernels: %s",
        mode,
        platform_cls.get_device_name(),
        vllm.__version__,
        torch.__version__,
        _torch_npu_version(),
        layers,
        kernel_report.summary(envs.requested_mode()),
    )


def _torch_npu_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("torch_npu")
    except importlib.metadata.PackageNotFoundError:
        return "absent"
