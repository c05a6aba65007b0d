# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up checks the support table needs beyond its value checks (option_support.ARG_CHECKS).

* :data:`EARLY_ARGS`: refused engine arguments that vLLM (0.32 to 0.34) itself rejects on a non-CUDA
  platform while ``EngineArgs.create_engine_config`` builds the sub-configs, before any platform
  hook sees the finished ``VllmConfig`` (``ParallelConfig.__post_init__`` for ``enable_eplb`` /
  ``enable_elastic_ep``, ``ModelConfig.__post_init__`` for ``enable_cumem_allocator``,
  ``EngramConfig.verify_model_config`` for ``engram_config``, ``create_engine_config`` itself for
  ``enable_fault_tolerance``, ``VllmConfig.__post_init__`` for 0.34's
  ``enable_extensible_kv_cache``; ``vllm/config/*.py``, ``vllm/engine/arg_utils.py``). Their upstream
  messages do not say what to change on Ascend, so the ``early-option-refusals`` patch checks the
  ``EngineArgs`` first and raises our refusal (the same text features.check_features gives).
* :func:`ir_provider_refusal`: ``--ir-op-priority`` / ``--kernel-config`` ``ir_op_priority`` may
  only name IR-op providers that run on Ascend (``"ascend"``, from vllm_ascend_models.ir_kernels,
  and vLLM's ``"native"``); vLLM installs the lists in every worker
  (``vllm/v1/worker/worker_base.py``, ``IrOpPriorityConfig.set_default`` in
  ``vllm/config/kernel.py``), where another provider is a CUDA/ROCm kernel or an assertion.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: engine arguments checked on EngineArgs before vLLM's own checks (module docstring)
EARLY_ARGS = ("enable_eplb", "enable_elastic_ep", "enable_cumem_allocator", "engram_config",
              "enable_fault_tolerance", "fault_tolerance_config",
              # VllmConfig._resolve_extensible_kv_cache (vLLM 0.34) raises off CUDA
              "enable_extensible_kv_cache")
#: IR-op providers that run on Ascend (vLLM's reference "native" and the models layer's)
IR_PROVIDERS = ("ascend", "native")
IR_FIX = ("name only the providers 'ascend' and 'native' in --ir-op-priority / "
          "kernel_config.ir_op_priority (e.g. {\"rms_norm\": [\"native\"]}), or leave it unset")


def early_refusals() -> list:
    """refusal.Refusal objects for :data:`EARLY_ARGS`, read from an ``EngineArgs``."""
    from vllm_ascend_platform.options import support as S
    from vllm_ascend_platform.options.refusal import Refusal

    fixes = {r.name: r.evidence for r in S.rows(line=S.EVERY_LINE) if r.kind == S.KINDS[0]}

    def requested(name: str):
        ok = S.ARG_CHECKS[name][1]
        return lambda args, _ascend: (hasattr(args, name)
                                      and not S._fine(getattr(args, name), ok))

    return [Refusal(f"{S.flag(n)} / {n}", requested(n), fixes[n]) for n in EARLY_ARGS]


def check_engine_args(engine_args: Any) -> None:
    """Raise refusal.UnsupportedFeatureError when ``engine_args`` asks for an
    :data:`EARLY_ARGS` option (listing each with its fix)."""
    from vllm_ascend_platform.options.refusal import raise_refused

    raise_refused([r for r in early_refusals() if r.requested(engine_args, None)])


def _ascend_is_current() -> bool:
    from vllm.platforms import current_platform

    return type(current_platform).__module__.startswith("vllm_ascend_platform")


# patch: early-option-refusals (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def refuse_before_vllm() -> None:
    """Wrap ``EngineArgs.create_engine_config`` (:func:`wrap_create_engine_config`). Idempotent."""
    from vllm.engine.arg_utils import EngineArgs

    original = EngineArgs.create_engine_config
    if getattr(original, "__ascend_early_check__", False):
        return
    EngineArgs.create_engine_config = wrap_create_engine_config(original)


def wrap_create_engine_config(original: Any) -> Any:
    """``original`` (vLLM's ``EngineArgs.create_engine_config``) preceded, on the Ascend platform,
    by :func:`check_engine_args` and ``config_defaults.emulation_engine_defaults`` (other
    platforms: unchanged)."""
    from vllm_ascend_platform.startup.config_defaults import emulation_engine_defaults

    def create_engine_config(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _ascend_is_current():
            check_engine_args(self)
            emulation_engine_defaults(self)
        return original(self, *args, **kwargs)

    create_engine_config.__ascend_early_check__ = True  # type: ignore[attr-defined]
    create_engine_config.__wrapped__ = original  # type: ignore[attr-defined]
    create_engine_config.__doc__ = original.__doc__
    return create_engine_config


# ---- IR-op providers -----------------------------------------------------------------------
def foreign_ir_providers(vllm_config: Any) -> list[str]:
    """``op=provider`` for each provider in ``kernel_config.ir_op_priority`` that is not in
    :data:`IR_PROVIDERS` (empty when the config has no kernel config)."""
    priority = getattr(getattr(vllm_config, "kernel_config", None), "ir_op_priority", None)
    if priority is None:
        return []
    lists = (dataclasses.asdict(priority)
             if dataclasses.is_dataclass(priority) and not isinstance(priority, type)
             else dict(vars(priority)))
    return [f"{op}={p}" for op, providers in lists.items() for p in (providers or [])
            if p not in IR_PROVIDERS]


def ir_provider_refusal():
    """The refusal.Refusal for IR-op providers that do not run on Ascend."""
    from vllm_ascend_platform.options.refusal import Refusal

    return Refusal("--ir-op-priority / kernel_config.ir_op_priority (provider not on Ascend)",
                   lambda c, _a: bool(foreign_ir_providers(c)), IR_FIX)
