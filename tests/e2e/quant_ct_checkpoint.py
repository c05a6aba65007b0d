# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""An int8 W8A8 compressed-tensors checkpoint of SmolLM2-135M-Instruct for the e2e tests.

The format vLLM's own CPU and GPU backends serve (``quant_method: "compressed-tensors"``,
``format: "int-quantized"``): the ``quantization_config`` is built with the ``compressed-tensors``
library's own types from its ``W8A8`` preset (weights int8 per output channel, symmetric, static;
activations int8 per token, symmetric, dynamic; ``lm_head`` ignored), and every decoder-layer
linear's weight is quantized with the library's ``calculate_qparams`` / ``quantize`` (its
symmetric scale is ``max|w_row| / 127.5``, so -128 occurs). Tensors per quantized linear:
``weight`` int8 [out, in], ``weight_scale`` float32 [out, 1]; everything else is the float
checkpoint's. Made once from the demo checkpoint (about 10 s), cached under
``${VLLM_ASCEND_CACHE:-~/.cache/vllm-ascend}/quantized/``; nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

#: bump to rebuild the cached checkpoint when the recipe changes
RECIPE_VERSION = "1"
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def quantization_config() -> dict:
    """``config.json``'s ``quantization_config``, from compressed-tensors' ``W8A8`` preset."""
    from compressed_tensors.config import CompressionFormat
    from compressed_tensors.quantization import (
        QuantizationConfig,
        QuantizationScheme,
        QuantizationStatus,
    )
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES

    cfg = QuantizationConfig(
        config_groups={"group_0": QuantizationScheme(targets=["Linear"], **PRESET_SCHEMES["W8A8"])},
        ignore=["lm_head"], format=CompressionFormat.int_quantized.value,
        quantization_status=QuantizationStatus.COMPRESSED)
    return json.loads(cfg.model_dump_json(exclude_none=True))


def _quantize_weight(w):
    """(int8 weight [out, in], float32 scale [out, 1]) by the library's own quantizer."""
    import torch
    from compressed_tensors.quantization.lifecycle.forward import quantize
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES
    from compressed_tensors.quantization.utils import calculate_qparams

    args = PRESET_SCHEMES["W8A8"]["weights"]
    w = w.float()
    scale, zero = calculate_qparams(w.amin(1, keepdim=True).clamp(max=0),
                                    w.amax(1, keepdim=True).clamp(min=0), args)
    q = quantize(w, scale, zero, args, dtype=torch.int8)
    return q.contiguous(), scale.float().contiguous()


def compressed_int8(source: str | None = None, name: str = "SmolLM2-135M-Instruct") -> str:
    """Path of the cached compressed-tensors int8 W8A8 checkpoint of ``source`` (default: the
    SmolLM2 demo checkpoint), made now when absent (module doc)."""
    from safetensors.torch import load_file, save_file

    from vllm_ascend import demo_model

    out = demo_model.cache_root() / "quantized" / f"{name}-ct-w8a8-int8-r{RECIPE_VERSION}"
    if (out / "model.safetensors").exists():
        return str(out)
    src = Path(source or demo_model.prepare())
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tensors = {}
    for f in sorted(src.glob("*.safetensors")):
        tensors.update(load_file(str(f)))
    for key in list(tensors):
        parts = key.split(".")
        if len(parts) >= 3 and parts[-1] == "weight" and parts[-2] in LINEARS:
            tensors[key], tensors[key[:-len("weight")] + "weight_scale"] = _quantize_weight(
                tensors[key])
    save_file(tensors, str(work / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"] = quantization_config()
    (work / "config.json").write_text(json.dumps(config, indent=2))
    for f in src.iterdir():
        if f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy(f, work / f.name)
    work.rename(out)
    return str(out)
