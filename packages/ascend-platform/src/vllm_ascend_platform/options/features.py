# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Features the Ascend plugin does not serve yet, refused at start-up.

A request path that is not built must fail when the engine is configured, naming
the feature and what to change, never mid-request. Each check
reads a field of vLLM 0.32's ``VllmConfig`` (``vllm/config/vllm.py``) or of
:class:`~vllm_ascend_platform.startup.config.AscendConfig`.
"""

from __future__ import annotations

from typing import Any

from vllm_ascend_platform.options.refusal import Refusal, raise_refused
from vllm_ascend_platform.options.table import DP_BACKEND_FIX
from vllm_ascend_platform.startup.config import AscendConfig

REFUSALS: tuple[Refusal, ...] = (
    Refusal(
        "FRACTAL_NZ weight casts (additional_config enable_weight_nz)",
        lambda c, a: a.enable_weight_nz,
        "remove enable_weight_nz from additional_config (or set it to false)",
    ),
    Refusal(
        "encoder-cache transfer",
        lambda c, a: getattr(c, "ec_transfer_config", None) is not None,
        "drop --ec-transfer-config / ec_transfer_config",
    ),
    Refusal(
        "--data-parallel-backend / data_parallel_backend",
        lambda c, a: getattr(getattr(c, "parallel_config", None), "data_parallel_backend",
                             "mp") != "mp",
        DP_BACKEND_FIX,
    ),
)


def refused_features(vllm_config: Any, ascend_config: AscendConfig) -> list[Refusal]:
    """The refusals that apply to this configuration (empty when all is supported): the
    features above, a KV connector not served (options/kv_connectors.py), the refused rows of
    the vLLM option table (options/support.py), the IR-op providers (options/guards.py) and the
    MRv2 host-mode sampling features (options/mrv2_host.py)."""
    from vllm_ascend_platform.options import mrv2_host
    from vllm_ascend_platform.options.guards import ir_provider_refusal
    from vllm_ascend_platform.options.kv_connectors import connector_refusals
    from vllm_ascend_platform.options.support import option_refusals

    candidates = (*REFUSALS, *connector_refusals(vllm_config), *option_refusals(),
                  ir_provider_refusal(), *mrv2_host.REFUSALS)
    return [r for r in candidates if r.requested(vllm_config, ascend_config)]


def check_features(vllm_config: Any, ascend_config: AscendConfig) -> None:
    """Raise when the configuration asks for a feature not built on Ascend yet.

    Raises:
        UnsupportedFeatureError: naming every refused feature and what to change.
    """
    raise_refused(refused_features(vllm_config, ascend_config))
