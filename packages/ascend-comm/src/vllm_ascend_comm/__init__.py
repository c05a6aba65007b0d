# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vllm_ascend_comm: Ascend device communication for vLLM (the range in ``LAYER["vllm"]``).

- :class:`vllm_ascend_comm.communicator.NPUCommunicator`: vLLM's ``DeviceCommunicatorBase`` for
  Ascend (HCCL) and CPU emulation (gloo); published in :data:`LAYER` as ``device_communicator``.
- :mod:`vllm_ascend_comm.hccl`: ctypes binding to ``libhccl.so`` (``HCCL_SO_PATH``).
- :func:`vllm_ascend_comm.stateless.stateless_init_device_torch_dist_pg`: the platform hook for
  stateless (data-parallel) device groups (``stateless_process_group``).

Importing this package does not import vLLM; :func:`register` does.
"""

from __future__ import annotations

import logging

__version__ = "0.2.0"

#: This layer's description (docs/architecture.md, "The layer contract"); read only by the
#: platform, through the entry point ``vllm_ascend.layers: comm``.
LAYER: dict = {
    "name": "comm",
    "distribution": "vllm-ascend-comm",
    "version": __version__,
    "vllm": ">=0.34,<0.35",
    "provides": {
        "register": "vllm_ascend_comm.register",
        "device_communicator": "vllm_ascend_comm.communicator.NPUCommunicator",
        "stateless_process_group": "vllm_ascend_comm.stateless.stateless_init_device_torch_dist_pg",
    },
}

logger = logging.getLogger("vllm.ascend.comm")
_registered = False

__all__ = ["LAYER", "__version__", "is_registered", "register"]


def register() -> None:
    """The comm layer's register hook: checks that the communicator class imports (so a broken
    install fails at start-up, not at the first group). Idempotent; changes nothing in vLLM.

    Called by the platform's layer registration, which holds its lock and has checked the vLLM
    version.
    """
    global _registered
    if _registered:
        return
    from vllm_ascend_comm import communicator  # noqa: F401  (fail here, not at first group)

    _registered = True
    logger.debug("vllm-ascend-comm %s registered", __version__)


def is_registered() -> bool:
    """True once :func:`register` has completed in this process."""
    return _registered
