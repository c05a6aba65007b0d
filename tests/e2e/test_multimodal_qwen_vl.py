# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Qwen2.5-VL (tiny random weights) through the plugin: text + images per prompt via ``LLM()``.

Why Qwen2.5-VL and not Qwen3-VL: its vision tower has windowed and full attention blocks, so
the encoder attention runs with two different ``cu_seqlens`` layouts; its M-RoPE is the
sectioned one that ``npu_mrope``'s default cache mode serves (Qwen3-VL's interleaved mode is not
proven on hardware, ascend_ops/npu/mrope.py); and its image processing has transformers' PIL
backend (Qwen3-VL's processor adds a torchvision-only video path with timestamps).

One engine per mode, each in a child process (``_mm_child.py``) so the mode's environment is
set before vLLM starts:

* CPU emulation, float32: greedy tokens equal HF transformers float32 on the same weights and
  the same processed inputs (vLLM's expanded prompt ids, the PIL image processor's pixels);
* simulated NPU, bfloat16: teacher-forced agreement with HF float32 >= 97 %, with the vision
  encoder's attention and the text M-RoPE on ascend_ops' NPU branches (the simulator's ledger
  counts ``npu_fused_infer_attention_score`` and ``npu_mrope`` launches).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

HERE = Path(__file__).resolve().parent
MAX_TOKENS = 8
#: simulated NPU: more positions per prompt, so the 97 % bar is a rate and not "no miss at all"
SIM_MAX_TOKENS = 32
CHILD_TIMEOUT_S = 900
_PAD = "<|vision_start|><|image_pad|><|vision_end|>"


def _chat(text: str, n_images: int) -> str:
    return f"<|im_start|>user\n{_PAD * n_images}{text}<|im_end|>\n<|im_start|>assistant\n"


#: (text, image indices): one image, two images, a text-only prompt in the same batch
PROMPTS = [("Describe the picture.", [0]), ("Compare these two images.", [1, 2]),
           ("What is a tensor?", [])]
#: (height, width) of the test images (each a few 14x14 patches)
SIZES = [(60, 90), (84, 56), (56, 112)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, model_path) -> str:
    from mm_checkpoints import save_tiny_qwen2_5_vl

    return save_tiny_qwen2_5_vl(tmp_path_factory.mktemp("qwen2_5_vl"), model_path)


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[str]:
    from PIL import Image

    out = tmp_path_factory.mktemp("images")
    paths = []
    for i, (h, w) in enumerate(SIZES):
        rng = np.random.RandomState(i)
        path = out / f"image{i}.png"
        Image.fromarray((rng.rand(h, w, 3) * 255).astype("uint8")).save(path)
        paths.append(str(path))
    return paths


def _run_child(mode: str, checkpoint: str, images: list[str], work: Path, engine: dict,
               max_tokens: int = MAX_TOKENS) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    spec = {"model": checkpoint, "engine": engine, "max_tokens": max_tokens,
            "prompts": [{"text": _chat(t, len(idx)), "images": [images[i] for i in idx]}
                        for t, idx in PROMPTS]}
    spec_path, out_path, log_path = work / "spec.json", work / "out.json", work / "child.log"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items()
           if k not in ("VLLM_ASCEND_EMULATE", "VLLM_ASCEND_SIMULATE_NPU", "VLLM_TARGET_DEVICE")}
    env.update({"HF_HUB_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
                "VLLM_DISABLE_COMPILE_CACHE": "1", "OMP_WAIT_POLICY": "PASSIVE"})
    env["VLLM_ASCEND_EMULATE" if mode == "emulate" else "VLLM_ASCEND_SIMULATE_NPU"] = "1"
    if mode == "simulate":
        env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run([sys.executable, str(HERE / "_mm_child.py"), str(spec_path),
                                 str(out_path)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=str(HERE), timeout=CHILD_TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    if rc != 0 or not out_path.exists():
        raise AssertionError(f"{mode} child failed (rc={rc}); log tail:\n"
                             f"{log_path.read_text()[-6000:]}")
    return json.loads(out_path.read_text())


ENGINE = dict(max_model_len=512, max_num_seqs=4, limit_mm_per_prompt={"image": 2, "video": 0})


@pytest.fixture(scope="module")
def emulated(checkpoint, images, tmp_path_factory) -> dict:
    return _run_child("emulate", checkpoint, images, tmp_path_factory.mktemp("emulate"),
                      dict(ENGINE, dtype="float32"))


@pytest.fixture(scope="module")
def simulated(checkpoint, images, tmp_path_factory) -> dict:
    return _run_child("simulate", checkpoint, images, tmp_path_factory.mktemp("simulate"),
                      dict(ENGINE, dtype="bfloat16"), max_tokens=SIM_MAX_TOKENS)


class HFQwenVL:
    """HF transformers float32 on the checkpoint: ``Qwen2_5_VLForConditionalGeneration`` and the
    PIL image processor (``Qwen2VLImageProcessorPil``), independent of vLLM and of our layers."""

    def __init__(self, path: str) -> None:
        import transformers
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
            Qwen2VLImageProcessorPil,
        )

        self.model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
            path, dtype=torch.float32, attn_implementation="eager").eval()
        self.processor = Qwen2VLImageProcessorPil.from_pretrained(path)
        self.image_token_id = self.model.config.image_token_id

    def inputs(self, prompt_ids: list[int], image_paths: list[str]) -> dict:
        from PIL import Image

        ids = torch.tensor([prompt_ids], dtype=torch.long)
        kwargs: dict = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                        "mm_token_type_ids": (ids == self.image_token_id).to(torch.int32)}
        if image_paths:
            pix = self.processor([Image.open(p).convert("RGB") for p in image_paths],
                                 return_tensors="pt")
            kwargs["pixel_values"] = pix["pixel_values"].to(torch.float32)
            kwargs["image_grid_thw"] = pix["image_grid_thw"]
            merge = self.processor.merge_size ** 2
            want = int(sum(int(g.prod()) // merge for g in pix["image_grid_thw"]))
            assert int((ids == self.image_token_id).sum()) == want, "image tokens differ from HF"
        return kwargs

    @torch.inference_mode()
    def greedy(self, prompt_ids: list[int], image_paths: list[str], n: int) -> list[int]:
        out = self.model.generate(**self.inputs(prompt_ids, image_paths), max_new_tokens=n,
                                  min_new_tokens=n, do_sample=False)
        return out[0, len(prompt_ids):].tolist()

    @torch.inference_mode()
    def teacher_forced(self, prompt_ids: list[int], image_paths: list[str], gen: list[int],
                       tol: float = 0.05) -> tuple[int, list[str]]:
        kwargs = self.inputs(list(prompt_ids) + list(gen), image_paths)
        logits = self.model(**kwargs, use_cache=False).logits[0].to(torch.float32)
        lp = torch.log_softmax(logits[len(prompt_ids) - 1: len(prompt_ids) - 1 + len(gen)], -1)
        agreed, misses = 0, []
        for i, tok in enumerate(gen):
            top = int(torch.argmax(lp[i]))
            gap = float(lp[i, top] - lp[i, tok])
            if tok == top or gap <= tol:
                agreed += 1
            else:
                misses.append(f"position {i}: ours {tok}, HF {top}, gap {gap:.3f}")
        return agreed, misses


@pytest.fixture(scope="module")
def hf(checkpoint) -> HFQwenVL:
    return HFQwenVL(checkpoint)


def _image_paths(images, k):
    return [images[i] for i in PROMPTS[k][1]]


def test_emulation_greedy_equals_hf_float32(emulated, hf, images):
    for k, (prompt_ids, tokens) in enumerate(zip(emulated["prompt_token_ids"],
                                                emulated["tokens"], strict=True)):
        assert len(tokens) == MAX_TOKENS
        want = hf.greedy(prompt_ids, _image_paths(images, k), MAX_TOKENS)
        assert tokens == want, f"prompt {k}: ours {tokens}, HF {want}"


def test_emulation_encoder_and_mrope_ran_through_ascend_ops(emulated):
    calls = emulated["facts"]["op_calls"]
    assert any(k.startswith("encoder_attention/") and n > 0 for k, n in calls.items()), calls
    assert any(k.startswith("mrope/") and n > 0 for k, n in calls.items()), calls


def _hf_bfloat16_rate(hf: HFQwenVL, prompt_ids: list[list[int]], images) -> float:
    """HF transformers' own bfloat16 run of the same checkpoint, judged like ours."""
    import transformers

    bf16 = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
        hf.model.name_or_path, dtype=torch.bfloat16, attn_implementation="eager").eval()
    agreed = total = 0
    for k, ids in enumerate(prompt_ids):
        kwargs = hf.inputs(ids, _image_paths(images, k))
        if "pixel_values" in kwargs:
            kwargs["pixel_values"] = kwargs["pixel_values"].to(torch.bfloat16)
        with torch.inference_mode():
            gen = bf16.generate(**kwargs, max_new_tokens=SIM_MAX_TOKENS,
                                min_new_tokens=SIM_MAX_TOKENS, do_sample=False)
        a, _ = hf.teacher_forced(ids, _image_paths(images, k), gen[0, len(ids):].tolist())
        agreed, total = agreed + a, total + SIM_MAX_TOKENS
    return agreed / total


def test_simulated_npu_teacher_forced_agreement(simulated, hf, images):
    """>= 97 % of our bfloat16 tokens agree with HF float32 (teacher-forced). This tiny random
    model sits at bfloat16's own limit there: HF transformers' bfloat16 run of it measured
    93/96 (96.9 %) when this test was written, the misses all near-ties (0.1-0.4 nats). So the
    bar is 97 % or HF's own bfloat16 rate on the same prompts, whichever is lower: the
    simulated NPU must be at least as close to HF float32 as HF's bfloat16 is."""
    agreed = total = 0
    misses: list[str] = []
    for k, (prompt_ids, tokens) in enumerate(zip(simulated["prompt_token_ids"],
                                                simulated["tokens"], strict=True)):
        a, m = hf.teacher_forced(prompt_ids, _image_paths(images, k), tokens)
        agreed, total = agreed + a, total + len(tokens)
        misses += [f"prompt {k} {x}" for x in m]
    assert total == SIM_MAX_TOKENS * len(PROMPTS)
    if agreed / total >= 0.97:
        return
    hf_rate = _hf_bfloat16_rate(hf, simulated["prompt_token_ids"], images)
    assert agreed / total >= hf_rate, (
        f"{agreed}/{total} agree with HF float32, below 97 % and below HF bfloat16's own rate "
        f"{hf_rate:.3f}:\n" + "\n".join(misses))


def test_simulated_npu_encoder_ran_on_the_npu_branches(simulated):
    facts = simulated["facts"]
    assert facts["simulated"]
    calls, launches = facts["op_calls"], facts["npu_launches"]
    assert calls.get("encoder_attention/npu", 0) > 0, calls
    assert calls.get("mrope/npu", 0) > 0, calls
    assert launches.get("npu_fused_infer_attention_score", 0) > 0, launches
    assert launches.get("npu_mrope", 0) > 0, launches
