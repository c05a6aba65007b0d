# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vllm_ascend_models: Ascend layers plugged into vLLM's override points.

- RMSNorm / fused-add RMSNorm: vLLM IR-op provider ``"ascend"`` (:mod:`vllm_ascend_models.ir_kernels`),
  selected by :func:`default_ir_op_priority` from the platform's ``get_default_ir_op_priority``.
- SiluAndMul and RotaryEmbedding (plus its cache-only scaled subclasses): ``CustomOp.register_oot``
  replacements whose ``forward_oot`` calls ``ascend_ops`` (:func:`register`), enabled in
  ``compilation_config.custom_ops`` by :func:`configure` (the platform calls it at start-up).
- ``quantization="ascend"``: msModelSlim W8A8 / W8A8_DYNAMIC checkpoints
  (:mod:`vllm_ascend_models.quantization`), registered with vLLM's quantization registry.

The layer describes itself to the platform in :data:`LAYER` (docs/architecture.md, "The layer
contract"). Everything here is activated by the platform's layer registration only when the
Ascend platform is current; nothing changes vLLM at import time except importing
``ir_kernels`` (inert unless a priority list names ``"ascend"``).
"""

from __future__ import annotations

import logging

from vllm_ascend_models._custom_ops import OOT_OP_NAMES, enable_custom_ops

__version__ = "0.2.0"

IR_PROVIDER = "ascend"
"""Our vLLM IR-op provider name."""

#: This layer's description (docs/architecture.md, "The layer contract"); read only by the
#: platform, through the entry point ``vllm_ascend.layers: models``.
LAYER: dict = {
    "name": "models",
    "distribution": "vllm-ascend-models",
    "version": __version__,
    "vllm": ">=0.34,<0.35",
    "provides": {
        "register": "vllm_ascend_models.register",
        "configure": "vllm_ascend_models.configure",
        "ir_kernels": "vllm_ascend_models.ir_kernels.register_ir_kernels",
        "ir_op_priority": "vllm_ascend_models.default_ir_op_priority",
        "punica_wrapper": "vllm_ascend_models.lora.punica.PunicaWrapperNPU",  # docs/lora.md
        # the --quantization names this layer serves (the platform keeps no copy of them)
        "quantization_methods": "vllm_ascend_models.quantization.SERVED_METHODS",
        "msmodelslim_method": "vllm_ascend_models.quantization.QUANT_METHOD",
    },
}

logger = logging.getLogger("vllm.ascend.models")
_registered = False

__all__ = [
    "IR_PROVIDER",
    "LAYER",
    "OOT_OP_NAMES",
    "__version__",
    "configure",
    "default_ir_op_priority",
    "enable_custom_ops",
    "is_registered",
    "register",
]


def register() -> None:
    """Register the Ascend layers with vLLM; the models layer's register hook.

    Registers IR-op provider ``"ascend"``, the CustomOp OOT replacements for ``SiluAndMul`` and
    the rope classes, the MoE runner and quantization method ``"ascend"``. Idempotent. Called by
    the platform's layer registration (which holds its lock and has checked the vLLM version)
    only when the Ascend platform is current: the OOT replacements are process-wide.
    """
    global _registered
    if _registered:
        return
    from vllm_ascend_models import ir_kernels
    from vllm_ascend_models._custom_ops import register_custom_ops
    from vllm_ascend_models.moe import register_moe
    from vllm_ascend_models.quantization import register_quantization

    ir_kernels.register_ir_kernels()
    register_custom_ops()
    register_moe()
    register_quantization()
    _registered = True
    logger.debug("vllm-ascend-models %s registered", __version__)


def is_registered() -> bool:
    """True once :func:`register` has completed in this process."""
    return _registered


def configure(vllm_config, options=None) -> None:
    """Start-up hook: keep our OOT CustomOps enabled in ``vllm_config.compilation_config``.

    ``options`` is unused (this layer reads no ``additional_config`` section). See
    :func:`enable_custom_ops`.
    """
    enable_custom_ops(vllm_config.compilation_config)


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
