# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Load-time checks of msModelSlim tensors: dtype and shape per tensor, and nothing missing.

vLLM's weight loaders copy a checkpoint tensor into the parameter with ``Tensor.copy_``, which
casts silently (a float ``weight`` would land as int8 garbage), and vLLM's default loader checks
for weights that were never loaded only when no quantization is set (``DefaultModelLoader
.load_weights``, vLLM ``model_executor/model_loader/default_loader.py``). So every parameter of
``quantization="ascend"`` gets a loader that checks the incoming tensor against msModelSlim's
format (``ascendv1_saver``, listed in ``linear.py``) before vLLM's loader runs, and records what
arrived; ``process_weights_after_loading`` then refuses a layer with a tensor (or, for a fused
layer, one part's tensor) that never arrived. Every error names the checkpoint tensor and what
was expected, and is raised while the model loads, so the engine never starts half-loaded.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from vllm.model_executor.layers.linear import (
    MergedColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
)

#: "float" accepts any floating dtype (a bfloat16 source model may save bfloat16 scales)
FLOAT = "float"


def _shards(layer: torch.nn.Module) -> list[tuple[object, int]]:
    """(vLLM shard id, full output rows) of each part of ``layer``, in checkpoint order."""
    if isinstance(layer, QKVParallelLinear):
        kv = layer.total_num_kv_heads
        return [("q", layer.total_num_heads * layer.head_size), ("k", kv * layer.head_size),
                ("v", kv * getattr(layer, "v_head_size", layer.head_size))]
    if isinstance(layer, MergedColumnParallelLinear):
        return list(enumerate(layer.output_sizes))
    return [(None, layer.output_size)]


class LoadChecks:
    """Checked loaders for one quantized linear layer (module doc).

    ``spec`` maps each parameter name to (accepted dtypes, shape builder): the builder takes the
    part's full output rows and the full input size and returns the expected checkpoint shape.
    """

    def __init__(self, prefix: str, parts: list[str], layer: torch.nn.Module, input_size: int,
                 spec: dict[str, tuple[tuple, Callable[[int, int], tuple[int, ...]]]]):
        self.prefix = prefix
        self.input_size = input_size
        self.spec = spec
        self.loaded: set[tuple[str, object]] = set()
        shards = _shards(layer)
        if len(parts) != len(shards):
            raise ValueError(f"{prefix}: quant_model_description.json parts {parts} do not match "
                             f"the layer's {len(shards)} fused parts")
        base = prefix.rpartition(".")[0]
        #: shard id -> (full output rows, checkpoint module path)
        self.shards = {sid: (rows, f"{base}.{part}" if base else part)
                       for (sid, rows), part in zip(shards, parts, strict=True)}

    def _tensor_name(self, name: str, shard: object) -> str:
        entry = self.shards.get(shard)
        return f"{entry[1] if entry else self.prefix}.{name}"

    def wrap(self, name: str, loader: Callable) -> Callable:
        """A weight loader for parameter ``name`` that checks, records, then calls ``loader``."""
        dtypes, shape_of = self.spec[name]

        def checked(param, loaded_weight, *args, **kwargs):
            shard = args[0] if args else kwargs.get("loaded_shard_id")
            if shard not in self.shards:  # a checkpoint that stores the fused matrix whole
                raise ValueError(f"checkpoint tensor for {self.prefix}.{name} arrived as "
                                 f"shard {shard!r}; msModelSlim saves the parts "
                                 f"({', '.join(p for _, p in self.shards.values())}) separately")
            tensor = self._tensor_name(name, shard)
            ok = (loaded_weight.is_floating_point() if dtypes == (FLOAT,)
                  else loaded_weight.dtype in dtypes)
            if not ok:
                want = "a floating dtype" if dtypes == (FLOAT,) else " or ".join(map(str, dtypes))
                raise ValueError(f"checkpoint tensor {tensor!r}: expected {want}, found "
                                 f"{loaded_weight.dtype} (msModelSlim ascendv1 format)")
            want_shape = shape_of(self.shards[shard][0], self.input_size)
            if tuple(loaded_weight.shape) != want_shape:
                raise ValueError(f"checkpoint tensor {tensor!r}: expected shape "
                                 f"{list(want_shape)}, found {list(loaded_weight.shape)}")
            self.loaded.add((name, shard))
            return loader(param, loaded_weight, *args, **kwargs)

        return checked

    def require_loaded(self) -> None:
        """Raise ValueError naming the first checkpoint tensor that never arrived."""
        for name in self.spec:
            for sid in self.shards:
                if (name, sid) not in self.loaded:
                    raise ValueError(
                        f"checkpoint tensor {self._tensor_name(name, sid)!r} is missing: "
                        f"{self.prefix} is quantized in quant_model_description.json, so the "
                        f"checkpoint must hold its {', '.join(self.spec)}")


def quant_bias_once(layer: torch.nn.Module, bias: torch.Tensor) -> torch.Tensor:
    """A row-parallel layer's partial sums are all-reduced: only rank 0 adds ``quant_bias``."""
    if isinstance(layer, RowParallelLinear) and layer.tp_rank > 0:
        return torch.zeros_like(bias)
    return bias
