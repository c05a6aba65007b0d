# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Does a peft LoRA adapter fit the served checkpoint? Compared from safetensors headers only.

vLLM 0.32 matches an adapter to the model by module-name suffix (``vllm/lora/worker_manager.py``
``_load_adapter``) and copies its tensors into the stacked LoRA buffers when the adapter is
activated, inside a model step (``vllm/lora/layers/base_linear.py`` ``set_lora``). An adapter
made for another architecture or size with the same module names (``q_proj`` ... ``down_proj``)
passes the load and then fails that step. Here each ``lora_A`` ``[r, in]`` / ``lora_B``
``[out, r]`` tensor of the adapter (peft's key layout: ``base_model.model.<module>.lora_A.weight``)
is compared with the base weight ``<module>.weight`` ``[out, in]`` of the checkpoint, reading
only the safetensors headers (no tensor data).
"""

from __future__ import annotations

import os
from pathlib import Path

PEFT_PREFIX = "base_model.model."
PARTS = {".lora_A.weight": 1, ".lora_B.weight": 0}  # suffix -> dim of the base weight it must match


def _shapes(files: list[Path]) -> dict[str, list[int]]:
    from safetensors import safe_open

    shapes: dict[str, list[int]] = {}
    for f in files:
        with safe_open(str(f), framework="pt") as st:
            for key in st.keys():
                shapes[key] = list(st.get_slice(key).get_shape())
    return shapes


def adapter_mismatches(adapter_dir: str, model_dir: str) -> tuple[list[str], int]:
    """(problems, compared): the adapter tensors whose shape does not fit the checkpoint's
    weight of the same module, and how many tensors were compared.

    Both arguments are local directories (peft ``save_pretrained`` output with
    ``adapter_model.safetensors``; a Hugging Face checkpoint with ``*.safetensors``). Returns
    ``([], 0)`` when either side has no safetensors file (nothing to compare from headers).
    A module the checkpoint lacks is reported when *no* adapter module exists in it (names of
    another architecture); single absences (tied embeddings) are left to vLLM.
    """
    adapter_file = Path(adapter_dir) / "adapter_model.safetensors"
    model_files = sorted(Path(model_dir).glob("*.safetensors")) if os.path.isdir(model_dir) else []
    if not adapter_file.is_file() or not model_files:
        return [], 0
    base = _shapes(model_files)
    adapter = _shapes([adapter_file])
    problems: list[str] = []
    compared = found = 0
    for key, shape in adapter.items():
        suffix = next((s for s in PARTS if key.endswith(s)), None)
        if suffix is None or len(shape) != 2:
            continue
        module = key[len(PEFT_PREFIX):] if key.startswith(PEFT_PREFIX) else key
        module = module[: -len(suffix)]
        compared += 1
        weight = base.get(module + ".weight")
        if weight is None:
            continue
        found += 1
        dim = PARTS[suffix]
        want = weight[1] if dim == 1 else weight[0]
        got = shape[1] if dim == 1 else shape[0]
        if got != want:
            side = "input" if dim == 1 else "output"
            problems.append(f"{key} has {side} size {got}, the model's {module}.weight "
                            f"{weight} needs {want}")
    if compared and not found:
        problems.append(f"none of the adapter's {compared} LoRA tensors names a module of the "
                        "model (adapter keys like "
                        f"{next(iter(adapter))!r})")
    return problems, compared
