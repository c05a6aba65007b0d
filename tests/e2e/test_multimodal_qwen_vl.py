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
* simulated NPU, float16 (as the other simulated-NPU tests; why not bfloat16: the agreement
  test's docstring): teacher-forced agreement with HF float32 >= 97 %, with the vision
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
from mm_oracle import HFQwenVL

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
               max_tokens: int = MAX_TOKENS, repeat: bool = False) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    spec = {"model": checkpoint, "engine": engine, "max_tokens": max_tokens, "repeat": repeat,
            "other_image": images[2],
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
    # block size 16: the image prompts fill whole blocks, so prefix caching has blocks to hit
    return _run_child("emulate", checkpoint, images, tmp_path_factory.mktemp("emulate"),
                      dict(ENGINE, dtype="float32", block_size=16, disable_log_stats=False),
                      repeat=True)


@pytest.fixture(scope="module")
def simulated(checkpoint, images, tmp_path_factory) -> dict:
    return _run_child("simulate", checkpoint, images, tmp_path_factory.mktemp("simulate"),
                      dict(ENGINE, dtype="float16"), max_tokens=SIM_MAX_TOKENS)


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
    # graphs on: vLLM's default mode for this model (the engine is built without enforce_eager)
    assert emulated["facts"]["cudagraph_mode"] != "NONE", emulated["facts"]
    calls = emulated["facts"]["op_calls"]
    assert any(k.startswith("encoder_attention/") and n > 0 for k, n in calls.items()), calls
    assert any(k.startswith("mrope/") and n > 0 for k, n in calls.items()), calls


def test_emulation_prefix_cache_hits_by_image(emulated):
    """The same prompts again hit the prefix cache (block hashes include the images' mm hashes)
    and give the same tokens; the first prompt with another image in the same place hits
    nothing (its image starts inside the first block)."""
    repeat = emulated["repeat"]
    assert repeat["tokens"] == emulated["tokens"]
    # every whole 16-token block before each prompt's last token (vLLM recomputes the last one)
    full_blocks = sum((len(p) - 1) // 16 * 16 for p in emulated["prompt_token_ids"])
    assert full_blocks >= 32 and repeat["hits_same"] == full_blocks, repeat
    assert repeat["hits_other_image"] == 0, repeat


def test_simulated_npu_teacher_forced_agreement(simulated, hf, images):
    """>= 97 % of the simulated NPU's float16 tokens agree with HF float32 (teacher-forced), as
    in the other simulated-NPU tests. bfloat16 is not the dtype here: this tiny random model
    sits at bfloat16's own limit (HF transformers' bfloat16 run of it agreed with its float32
    run on 93/96 positions, 96.9 %; ours 92/96, every miss a near-tie of 0.1-0.2 nats)."""
    agreed = total = 0
    misses: list[str] = []
    for k, (prompt_ids, tokens) in enumerate(zip(simulated["prompt_token_ids"],
                                                simulated["tokens"], strict=True)):
        a, m = hf.teacher_forced(prompt_ids, _image_paths(images, k), tokens)
        agreed, total = agreed + a, total + len(tokens)
        misses += [f"prompt {k} {x}" for x in m]
    assert total == SIM_MAX_TOKENS * len(PROMPTS)
    assert agreed / total >= 0.97, f"{agreed}/{total} agree with HF float32:\n" + "\n".join(misses)


def test_simulated_npu_encoder_ran_on_the_npu_branches(simulated):
    facts = simulated["facts"]
    assert facts["simulated"]
    assert facts["cudagraph_mode"] != "NONE", facts
    calls, launches = facts["op_calls"], facts["npu_launches"]
    assert calls.get("encoder_attention/npu", 0) > 0, calls
    assert calls.get("mrope/npu", 0) > 0, calls
    assert launches.get("npu_fused_infer_attention_score", 0) > 0, launches
    assert launches.get("npu_mrope", 0) > 0, launches
