# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The ``--quantization`` methods the platform serves, read from the models layer's description.

The models layer owns these names: it registers its method with vLLM and publishes, in its
``LAYER`` description, the methods it serves (role ``quantization_methods``) and the one an
msModelSlim checkpoint is served with (role ``msmodelslim_method``); docs/architecture.md, "The
layer contract". The platform keeps no copy. Without the models layer nothing is served: a
quantized checkpoint is refused with :class:`~vllm_ascend_platform.startup.contract.MissingLayerError`,
which names the extra to install.
"""

from __future__ import annotations

from vllm_ascend_platform.startup import contract

#: published qualified name -> the list NPUPlatform.supported_quantization hands vLLM. One list
#: per process: vLLM's ``register_quantization_config`` appends a plugin's method to it in place
#: (vllm/model_executor/layers/quantization/__init__.py), as it did to the platform's own list.
_served: dict[str, list[str]] = {}


def served(needed_by: str | None = None) -> list[str]:
    """The ``--quantization`` methods served: the models layer's ``quantization_methods``, plus
    any method a vLLM quantization plugin registered since; ``[]`` when no installed layer
    publishes the role and ``needed_by`` is None.

    Raises:
        MissingLayerError: ``needed_by`` is given and the models layer is not installed (the
            message names ``pip install './[models]'``).
        ContractError: the published name is not a tuple of method names.
    """
    qualname = contract.provided("quantization_methods", needed_by)
    if qualname is None:
        return []
    if qualname not in _served:
        _served[qualname] = list(contract.provided_value("quantization_methods"))
    return _served[qualname]


def msmodelslim_method(needed_by: str) -> str:
    """The ``--quantization`` name an msModelSlim checkpoint is served with.

    Raises:
        MissingLayerError: the models layer is not installed (the message names ``needed_by``
            and ``pip install './[models]'``).
        ContractError: the published name is not a string.
    """
    method: str = contract.provided_value("msmodelslim_method", needed_by)
    return method
