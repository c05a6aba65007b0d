# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Wiring between layers, by what their descriptions publish (docs/architecture.md, "The layer
contract"): the platform never imports a layer module by name in its own source.
"""

from __future__ import annotations

import os

from vllm_ascend_platform import envs
from vllm_ascend_platform.startup import contract

#: env switch for the FULL-graph attention parameter update (default on; 0 = negative control)
PARAM_UPDATE_ENV = "VLLM_ASCEND_GRAPH_PARAM_UPDATE"


def connect_graph_param_updates() -> bool:
    """Register the attention layer's graph parameter-update hook with the graph layer.

    The hook is the ``graph_param_update_hook`` one layer publishes (attention); the registrar
    the ``graph_param_hook_register`` / ``graph_param_hook_unregister`` another publishes
    (graph), which runs registered hooks before every FULL replay. Runs in every process (the
    general plugin calls it after the layers' register hooks). ``VLLM_ASCEND_GRAPH_PARAM_UPDATE=0``
    leaves it unregistered (and removes it when an earlier call registered it: calling again
    applies the variable's current value), so captured graphs replay their capture-time
    attention lengths (a negative control).

    Returns:
        True when the hook was registered; False when switched off or a side is not installed.

    Raises:
        ValueError: ``VLLM_ASCEND_GRAPH_PARAM_UPDATE`` is not a boolean spelling.
    """
    enabled = PARAM_UPDATE_ENV not in os.environ or os.environ[PARAM_UPDATE_ENV].strip() == "" \
        or envs.flag(PARAM_UPDATE_ENV, "the FULL-graph attention parameter update")
    hook_name = contract.provided("graph_param_update_hook")
    register = contract.provided("graph_param_hook_register")
    unregister = contract.provided("graph_param_hook_unregister")
    if hook_name is None or register is None or unregister is None:
        return False
    hook = contract.resolve(hook_name)
    if not enabled:  # also undo an earlier registration in this process
        contract.resolve(unregister)(hook)
        return False
    contract.resolve(register)(hook)
    return True
