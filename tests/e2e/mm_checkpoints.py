# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A tiny random-weight Qwen2.5-VL checkpoint made with transformers' own classes (no hub access).

Tokenizer: the SmolLM2 checkpoint's (copied) with Qwen's vision tokens added
(``<|vision_start|>``, ``<|vision_end|>``, ``<|image_pad|>``, ``<|video_pad|>``), so the
processor's token ids are the config's. Image processor: transformers' PIL backend
(``Qwen2VLImageProcessorPil``), which needs no torchvision; the pixel budget is small so a
test image becomes a few patches. Head dims: text 64 with ``mrope_section`` [8, 12, 12] (a list
``npu_mrope`` documents), vision 80 (vllm-ascend's 64 < d < 128 padding case).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
#: pixel budget: 4..64 patches of 14x14 per image (1..16 tokens after the 2x2 merge)
MIN_PIXELS, MAX_PIXELS = 56 * 56, 28 * 28 * 16

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def save_tiny_qwen2_5_vl(out_dir: Path, smol_path: str, seed: int = 0) -> str:
    """Write the checkpoint, tokenizer and processor files to ``out_dir``; return its path."""
    import transformers
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    out_dir.mkdir(parents=True, exist_ok=True)
    tok = transformers.AutoTokenizer.from_pretrained(smol_path)
    tok.add_special_tokens({"additional_special_tokens": list(VISION_TOKENS)})
    ids = {t: tok.convert_tokens_to_ids(t) for t in VISION_TOKENS}
    vocab = len(tok)
    text = dict(vocab_size=vocab, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                 "mrope_section": [8, 12, 12]},
                initializer_range=0.2, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                eos_token_id=tok.eos_token_id)
    vision = dict(depth=2, hidden_size=160, intermediate_size=192, num_heads=2, patch_size=14,
                  spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                  out_hidden_size=128, fullatt_block_indexes=[1], initializer_range=0.02)
    cfg = transformers.Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = transformers.Qwen2_5_VLForConditionalGeneration(cfg).to(torch.float32).eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out_dir)
    image_processor = Qwen2VLImageProcessorPil(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS,
                                               patch_size=14, merge_size=2, temporal_patch_size=2)
    image_processor.save_pretrained(out_dir)
    # the processor class vLLM's Qwen2.5-VL processing loads (processing_qwen2_5_vl.py)
    (out_dir / "processor_config.json").write_text(json.dumps(
        {"processor_class": "Qwen2_5_VLProcessor"}))
    (out_dir / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    for extra in ("generation_config.json",):
        src = Path(smol_path) / extra
        if src.exists() and not (out_dir / extra).exists():
            shutil.copy(src, out_dir / extra)
    return str(out_dir)
