"""vllm_ascend_models: Ascend layers plugged into vLLM 0.32's override points.

- RMSNorm / fused-add RMSNorm: vLLM IR-op provider ``"ascend"`` (:mod:`vllm_ascend_models.ir_kernels`),
  selected by :func:`default_ir_op_priority` from the platform's ``get_default_ir_op_priority``.
- SiluAndMul and RotaryEmbedding (plus its cache-only scaled subclasses): ``CustomOp.register_oot``
  replacements whose ``forward_oot`` calls ``ascend_ops`` (:func:`register`), enabled through
  ``compilation_config.custom_ops`` (:func:`enable_custom_ops`).
- ``quantization="ascend"``: msModelSlim W8A8 / W8A8_DYNAMIC checkpoints
  (:mod:`vllm_ascend_models.quantization`), registered with vLLM's quantization registry.

Everything here is activated by the meta-package's general plugin only when the Ascend platform
is current; nothing changes vLLM at import time except importing ``ir_kernels`` (inert unless
a priority list names ``"ascend"``).
"""

from __future__ import annotations

import logging
import threading

from vllm_ascend_models._custom_ops import OOT_OP_NAMES, enable_custom_ops
from vllm_ascend_models._version_check import SUPPORTED_VLLM, check_vllm_version

__version__ = "0.1.0"

IR_KERNELS_MODULE = "vllm_ascend_models.ir_kernels"
"""Module the platform's ``import_ir_kernels()`` imports (registers IR provider ``"ascend"``)."""

IR_PROVIDER = "ascend"
"""Our vLLM IR-op provider name."""

logger = logging.getLogger("vllm.ascend.models")
_lock = threading.Lock()
_registered = False

__all__ = [
    "IR_KERNELS_MODULE",
    "IR_PROVIDER",
    "OOT_OP_NAMES",
    "SUPPORTED_VLLM",
    "__version__",
    "default_ir_op_priority",
    "enable_custom_ops",
    "is_registered",
    "register",
]


def register() -> None:
    """Register the Ascend layers with vLLM; the models layer's register hook.

    Checks that vLLM is 0.32.x (RuntimeError with the fix otherwise), registers IR-op provider
    ``"ascend"`` and the CustomOp OOT replacements for ``SiluAndMul`` and the rope classes.
    Idempotent and thread-safe. Call only when the Ascend platform is current (the meta-package's
    general plugin does): the OOT replacements are process-wide.
    """
    global _registered
    with _lock:
        if _registered:
            return
        version = check_vllm_version()
        from vllm_ascend_models import ir_kernels
        from vllm_ascend_models._custom_ops import register_custom_ops
        from vllm_ascend_models.moe import register_moe
        from vllm_ascend_models.quantization import register_quantization

        ir_kernels.register_ir_kernels()
        register_custom_ops()
        register_moe()
        register_quantization()
        _registered = True
        logger.debug("vllm-ascend-models %s registered on vLLM %s", __version__, version)


def is_registered() -> bool:
    """True once :func:`register` has completed in this process."""
    return _registered


def default_ir_op_priority(vllm_config):
    """The ``IrOpPriorityConfig`` ``NPUPlatform.get_default_ir_op_priority`` must return.

    ``rms_norm`` and ``fused_add_rms_norm``: ``["ascend", "native"]`` (native takes the argument
    combinations ours declines, e.g. a ``variance_size`` override); every other IR op:
    ``["native"]``. ``vllm_config`` (``VllmConfig``) is accepted for the hook's signature; the
    choice does not depend on it yet. vLLM appends these after any user ``--ir-op-priority``.
    """
    from vllm.config.kernel import IrOpPriorityConfig

    from vllm_ascend_models import ir_kernels

    ir_kernels.register_ir_kernels()
    ours = [IR_PROVIDER, "native"]
    return IrOpPriorityConfig.with_default(
        ["native"], rms_norm=list(ours), fused_add_rms_norm=list(ours)
    )
