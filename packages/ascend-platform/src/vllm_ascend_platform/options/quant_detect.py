# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Detect an msModelSlim checkpoint so ``vllm serve <dir>`` needs no ``--quantization ascend``.

msModelSlim's ``ascendv1_saver`` leaves ``config.json`` as it was (no ``quantization_config``)
and writes the per-tensor schemes to ``quant_model_description.json`` instead, so vLLM's own
detection (``ModelConfig._verify_quantization``, which asks each registered quantization config's
``override_quantization_method`` only when ``config.json`` has a ``quantization_config``) never
sees it. vllm-ascend treats the description file itself as the marker; so do we, from the
platform's ``check_and_update_config`` hook (vLLM ``Platform`` interface), without patching vLLM:

* ``quantization`` unset, no ``quantization_config`` in ``config.json``, and the description
  present in the model directory (or in the Hugging Face cache: no network) -> set
  ``model_config.quantization`` to the method the models layer publishes for msModelSlim
  checkpoints (``"ascend"``; options/quant_methods.py) and build the quantization config the way
  ``VllmConfig.__post_init__`` does (``VllmConfig._get_quantization_config``, vLLM
  ``config/vllm.py``), which also runs the description's own checks.
* anything else is left to vLLM (an explicit ``quantization`` wins, and ``quantization="ascend"``
  on a checkpoint without a description is refused by the models layer's config).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vllm.logger import init_logger

if TYPE_CHECKING:
    from vllm.config import VllmConfig

logger = init_logger("vllm.ascend.quantization")

DESCRIPTION_FILE = "quant_model_description.json"


def has_description(model: str, revision: str | None = None) -> bool:
    """True when ``model`` (a directory, or a Hub id already in the local Hugging Face cache)
    holds msModelSlim's ``quant_model_description.json``. Never touches the network."""
    local = Path(model)
    if local.exists():
        return (local / DESCRIPTION_FILE).is_file()
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id=model, filename=DESCRIPTION_FILE, revision=revision)
    except ValueError:  # not a valid repo id: nothing cached under it
        return False
    return isinstance(found, str)


def detect_msmodelslim(vllm_config: VllmConfig) -> bool:
    """Switch ``vllm_config`` to ``quantization="ascend"`` when it serves an msModelSlim
    checkpoint without naming a quantization method (module doc). Returns True when it did.

    Raises:
        ValueError: from the description's checks (an unsupported scheme, names the tensor).
        MissingLayerError: the checkpoint is msModelSlim's and the models layer, which serves
            it, is not installed (names its extra).
    """
    model_config = vllm_config.model_config
    if model_config is None or model_config.quantization is not None:
        return False
    if getattr(model_config.hf_config, "quantization_config", None) is not None:
        return False
    if not has_description(model_config.model, model_config.revision):
        return False
    from vllm.config import VllmConfig

    from vllm_ascend_platform.options.quant_methods import msmodelslim_method

    method = msmodelslim_method(
        f"serving {model_config.model}, an msModelSlim checkpoint (it holds {DESCRIPTION_FILE})")
    model_config.quantization = method
    vllm_config.quant_config = VllmConfig._get_quantization_config(
        model_config, vllm_config.load_config)
    logger.info("%s holds %s (msModelSlim): serving it with quantization=%r", model_config.model,
                DESCRIPTION_FILE, method)
    return True
