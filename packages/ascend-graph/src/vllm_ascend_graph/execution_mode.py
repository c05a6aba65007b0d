# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``configure_execution_mode``: graph and compile settings for a ``VllmConfig``.

Called (as ``vllm_ascend_graph.configure``) from ``NPUPlatform.check_and_update_config``
instead of the platform's eager defaults whenever this layer is installed. By then
vLLM's ``VllmConfig.__post_init__`` has filled in the compilation mode, the
``cudagraph_mode`` and default capture sizes (``_set_cudagraph_sizes``) -- but only
when the platform reports ``support_static_graph_mode() == True``; otherwise vLLM
has already forced ``cudagraph_mode`` to NONE and we keep it.

Decisions (each logged once):

* ``enforce_eager`` (or no model config): nothing to decide; the platform has already made the
  run eager (its one eager setting, ``vllm_ascend_platform.startup.config_defaults``).
* compilation mode ``VLLM_COMPILE``: the compile backend is ours
  (``vllm_ascend_graph.compiler.AscendCompiler``) in place of ``""``, ``"eager"`` or
  ``"inductor"`` (no inductor on Ascend). STOCK_TORCH_COMPILE and DYNAMO_TRACE_ONCE
  are refused (they would hand the FX graph to torch's backend registry, not to us).
* capture sizes: :func:`vllm_ascend_graph.capture_sizes.plan_capture_sizes`.
"""

from __future__ import annotations

from typing import Any

from vllm.logger import init_logger

from vllm_ascend_graph.capture_sizes import graphs_per_size, plan_capture_sizes
from vllm_ascend_graph.names import COMPILER_CLS
from vllm_ascend_graph.options import GraphOptions, graph_options

logger = init_logger("vllm.ascend.graph")

#: backend strings we replace with our compiler under VLLM_COMPILE
_REPLACEABLE_BACKENDS = ("", "eager", "inductor", COMPILER_CLS)


MEGA_AOT_ENV = "VLLM_USE_MEGA_AOT_ARTIFACT"


# patch: mega-aot-artifact-off (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def _keep_aot_cache_loadable() -> None:
    """Turn off vLLM's "mega" AOT artifact for our backend (or refuse a user's explicit on).

    vLLM 0.32 (torch >= 2.12) caches the compiled model under
    ``~/.cache/vllm/torch_compile_cache/torch_aot_compile`` and, by default, reloads it from
    inductor *standalone-compile* artifacts (``reconstruct_serializable_fn_from_mega_artifact``
    in ``vllm/compilation/caching.py``). Our compiler generates no code, hence no such
    artifacts, so the second start of the same model died with "'NoneType' object is not
    callable". With the variable 0, the reload re-runs vLLM's backend on the cached Dynamo
    graph, which calls our compiler (passes only) again: the start-up saving of the AOT cache
    stays. Set here, in the engine's front process, before any worker process starts.

    Raises:
        ValueError: ``VLLM_USE_MEGA_AOT_ARTIFACT=1`` was set explicitly.
    """
    import os

    value = os.environ.get(MEGA_AOT_ENV)
    if value is None:
        os.environ[MEGA_AOT_ENV] = "0"
        logger.info_once("%s=0: the Ascend compile backend emits no inductor artifacts.",
                         MEGA_AOT_ENV)
    elif value == "1":
        raise ValueError(
            f"{MEGA_AOT_ENV}=1 needs inductor standalone-compile artifacts, which the Ascend "
            f"compile backend does not produce; unset {MEGA_AOT_ENV} (or set it to 0), or run "
            "with enforce_eager=True."
        )


def configure_execution_mode(vllm_config: Any, options: GraphOptions | None = None) -> None:
    """Decide compilation mode, backend, graph mode and capture sizes (in place).

    ``options`` is this layer's typed section as the platform validated it (None: read it from
    ``vllm_config``). An eager run (``enforce_eager`` or no model) is left as the platform set it.

    Raises:
        ValueError: an unsupported compilation mode; ``VLLM_USE_MEGA_AOT_ARTIFACT=1``;
            capture sizes that leave nothing to capture; a graph budget below one size's graphs.
        TypeError: a capture size that is not an int.
    """
    from vllm.config import CompilationMode, CUDAGraphMode

    model = vllm_config.model_config
    if model is None or model.enforce_eager:
        return
    comp = vllm_config.compilation_config
    opts = options if options is not None else graph_options(vllm_config)

    if comp.mode in (CompilationMode.STOCK_TORCH_COMPILE, CompilationMode.DYNAMO_TRACE_ONCE):
        raise ValueError(
            f"compilation mode {comp.mode.name} is not supported on Ascend; use "
            "VLLM_COMPILE (3, the default) or NONE (0), or set enforce_eager=True."
        )
    if comp.mode == CompilationMode.VLLM_COMPILE:
        if comp.backend not in _REPLACEABLE_BACKENDS:
            raise ValueError(
                f"compilation backend {comp.backend!r} is not supported on Ascend; leave "
                f"'backend' unset (the Ascend backend {COMPILER_CLS} is used)."
            )
        if comp.backend != COMPILER_CLS:
            logger.info_once(
                "Compile backend %r replaced by the Ascend backend (%s).",
                comp.backend or "<default>", COMPILER_CLS,
            )
        comp.backend = COMPILER_CLS
        _keep_aot_cache_loadable()

    mode = comp.cudagraph_mode
    if mode is None or mode == CUDAGraphMode.NONE:
        comp.cudagraph_mode = CUDAGraphMode.NONE
        comp.cudagraph_capture_sizes = []
        comp.max_cudagraph_capture_size = 0
        logger.info_once("ACL graph capture is off (cudagraph_mode NONE).")
        return

    piecewise = mode.has_piecewise_cudagraphs() and comp.mode == CompilationMode.VLLM_COMPILE
    per_size = graphs_per_size(
        piecewise=piecewise,
        full=mode.has_full_cudagraphs(),
        num_layers=model.get_num_layers(vllm_config.parallel_config),
    ) if (piecewise or mode.has_full_cudagraphs()) else 1
    sched = vllm_config.scheduler_config
    requested = list(comp.cudagraph_capture_sizes or [])
    plan = plan_capture_sizes(
        requested,
        max_num_seqs=sched.max_num_seqs,
        decode_query_len=vllm_config.uniform_decode_query_len,
        max_num_batched_tokens=sched.max_num_batched_tokens,
        graphs_per_size=per_size,
        budget=opts.effective_graph_budget,
    )
    if plan.over_limit:
        logger.warning(
            "ACL graph capture sizes %s exceed max_num_seqs x decode query length "
            "(or max_num_batched_tokens) and are dropped.", plan.over_limit,
        )
    if plan.pruned:
        logger.warning(
            "ACL graph budget %d allows %d capture sizes at %d graphs each; kept %s "
            "(dropped %s). Raise additional_config['ascend_compilation_config']"
            "['graph_budget'] to keep more.",
            plan.budget, len(plan.sizes), plan.graphs_per_size, plan.sizes, plan.pruned,
        )
    comp.cudagraph_capture_sizes = plan.sizes
    comp.max_cudagraph_capture_size = plan.sizes[-1]
    logger.info(
        "ACL graph mode %s, compilation mode %s, capture sizes %s (%d graphs of budget %d).",
        mode.name, comp.mode.name, plan.sizes, plan.num_graphs, plan.budget,
    )
