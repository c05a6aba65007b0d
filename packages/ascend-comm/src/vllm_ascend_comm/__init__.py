"""vllm_ascend_comm: Ascend device communication for vLLM 0.32.

- :class:`vllm_ascend_comm.communicator.NPUCommunicator`: vLLM's ``DeviceCommunicatorBase`` for
  Ascend (HCCL) and CPU emulation (gloo); named by ``NPUPlatform.get_device_communicator_cls``.
- :mod:`vllm_ascend_comm.hccl`: ctypes binding to ``libhccl.so`` (``HCCL_SO_PATH``).
- :func:`vllm_ascend_comm.stateless.stateless_init_device_torch_dist_pg`: the platform hook for
  stateless (data-parallel) device groups.

Importing this package does not import vLLM; :func:`register` does.
"""

from __future__ import annotations

import logging
import threading

__version__ = "0.1.0"

COMMUNICATOR_CLS = "vllm_ascend_comm.communicator.NPUCommunicator"
"""Qualified name the platform returns from ``get_device_communicator_cls``."""

STATELESS_PG_FN = "vllm_ascend_comm.stateless.stateless_init_device_torch_dist_pg"
"""Qualified name of the function behind ``NPUPlatform.stateless_init_device_torch_dist_pg``."""

logger = logging.getLogger("vllm.ascend.comm")
_lock = threading.Lock()
_registered = False

__all__ = ["COMMUNICATOR_CLS", "STATELESS_PG_FN", "__version__", "is_registered", "register"]


def register() -> None:
    """The comm layer's register hook (called by the meta-package's general plugin).

    Checks that vLLM is 0.32.x (RuntimeError naming the installed version and the fix otherwise)
    and that the communicator class imports. Idempotent and thread-safe; changes nothing in vLLM.
    """
    global _registered
    with _lock:
        if _registered:
            return
        from vllm_ascend_comm._version_check import check_vllm_version

        version = check_vllm_version()
        from vllm_ascend_comm import communicator  # noqa: F401  (fail here, not at first group)

        _registered = True
        logger.debug("vllm-ascend-comm %s registered on vLLM %s", __version__, version)


def is_registered() -> bool:
    """True once :func:`register` has completed in this process."""
    return _registered
