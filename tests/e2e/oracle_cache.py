# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""On-disk store of HF oracle runs, shared by the e2e pytest processes of one machine.

The e2e suite runs as several pytest processes (noxfile ``_pytest_parts``), and many of its
modules ask the HF oracle (``hf_oracle.HFOracle.greedy``) for the same continuations: the 8
prompts x 32 tokens alone cost ~45 s of transformers forward passes on the 2-core CI box, once
per process that needs them. A run is stored under a key that names everything its numbers
depend on, so a stored run is the run the oracle would compute:

* the model's weights (SHA-256 over every state-dict tensor's name, dtype, shape and bytes, so
  a merged LoRA adapter or another checkpoint is another key), its config and attention
  implementation;
* the request (prompt ids, tokens, KV rounding format, noise, seed);
* the oracle's own source (``hf_oracle.py``), torch and transformers versions, torch's thread
  count and CPU capability (float32 sums may round differently with either).

Files live under ``${VLLM_ASCEND_CACHE:-~/.cache/vllm-ascend}/oracle`` and are written to a
temporary name and renamed, so parts racing for one key each see a whole file.
``VLLM_ASCEND_ORACLE_CACHE=0`` turns the store off (every run computed).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch

ENV = "VLLM_ASCEND_ORACLE_CACHE"
_SOURCE = Path(__file__).with_name("hf_oracle.py")


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def model_fingerprint(model: torch.nn.Module) -> str:
    """SHA-256 over the model's config, attention implementation and every state-dict tensor."""
    import transformers

    h = hashlib.sha256()
    config = model.config
    h.update(config.to_json_string(use_diff=False).encode())
    h.update(str(getattr(config, "_attn_implementation", None)).encode())
    h.update(_SOURCE.read_bytes())
    h.update(f"{torch.__version__}|{transformers.__version__}|{torch.get_num_threads()}|"
             f"{torch.backends.cpu.get_cpu_capability()}".encode())
    for name, tensor in model.state_dict().items():
        t = tensor.detach().contiguous().reshape(-1)
        h.update(f"{name}|{t.dtype}|{tuple(tensor.shape)}".encode())
        h.update(memoryview(t.view(torch.uint8).numpy()))
    return h.hexdigest()


def _path(fingerprint: str, request: tuple) -> Path:
    from vllm_ascend import demo_model

    key = hashlib.sha256((fingerprint + json.dumps(request, default=str)).encode()).hexdigest()
    return demo_model.cache_root() / "oracle" / f"{key}.pt"


def load(fingerprint: str, request: tuple) -> tuple[list[int], list[torch.Tensor]] | None:
    """``(tokens, per-step logprobs)`` stored for ``request``, or None."""
    path = _path(fingerprint, request)
    if not path.exists():
        return None
    data = torch.load(path, weights_only=True)
    return list(data["tokens"]), list(data["logprobs"].unbind(0))


def store(fingerprint: str, request: tuple, tokens: list[int],
          logprobs: list[torch.Tensor]) -> None:
    path = _path(fingerprint, request)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    torch.save({"tokens": list(tokens), "logprobs": torch.stack(logprobs)}, tmp)
    os.replace(tmp, path)
