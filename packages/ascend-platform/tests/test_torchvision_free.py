# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Patch ``torchvision-free-processors`` (startup/torchvision_free.py): declared, drift-checked,
applied only without torchvision; the Qwen2-VL family then imports and its HF processor loads."""

from __future__ import annotations

import sys

import pytest
from vllm_ascend_platform.patches import registry
from vllm_ascend_platform.startup import torchvision_free as tf

NAME = "torchvision-free-processors"


def test_declared_with_a_passing_drift_check():
    patch = next(p for p in registry.DECLARATIONS if p.name == NAME)
    assert patch.scope == "startup"
    status = registry._drift(patch)
    assert status.state == registry.PENDING, status.reason


def test_nothing_changes_when_torchvision_imports(monkeypatch):
    monkeypatch.setattr(tf, "torchvision_importable", lambda: True)
    before = sys.modules.get(tf.TORCHVISION_MODULE)
    assert tf.install_pil_processors() is False
    assert sys.modules.get(tf.TORCHVISION_MODULE) is before


@pytest.mark.skipif(tf.torchvision_importable(), reason="torchvision imports here: patch inert")
def test_without_torchvision_the_qwen2_vl_family_processes_images(tmp_path):
    import numpy as np
    import transformers
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
        smart_resize,
    )

    assert tf.install_pil_processors() is True
    assert tf.install_pil_processors() is True  # idempotent
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import (
        Qwen2VLImageProcessor,
    )
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import (
        smart_resize as patched_resize,
    )

    assert patched_resize is smart_resize and Qwen2VLImageProcessor is Qwen2VLImageProcessorPil
    import vllm.model_executor.models.qwen2_5_vl  # noqa: F401  (imported smart_resize before)

    # a processor directory: tokenizer with the image token, PIL image processor, processor class
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=_word_tokenizer(), unk_token="[UNK]",
        additional_special_tokens=["<|image_pad|>", "<|video_pad|>"])
    tok.save_pretrained(tmp_path)
    Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=28 * 28 * 16).save_pretrained(tmp_path)
    (tmp_path / "processor_config.json").write_text('{"processor_class": "Qwen2VLProcessor"}')
    (tmp_path / "config.json").write_text('{"model_type": "qwen2_vl"}')
    processor = transformers.AutoProcessor.from_pretrained(tmp_path)
    assert isinstance(processor.image_processor, Qwen2VLImageProcessorPil)
    assert processor.video_processor.valid_kwargs is not None
    image = Image.fromarray(np.zeros((56, 84, 3), dtype=np.uint8))
    out = processor(text=["<|image_pad|>"], images=[image], return_tensors="pt")
    assert out["image_grid_thw"].tolist() == [[1, 4, 6]]
    with pytest.raises(ValueError, match="torchvision"):
        processor(text=["<|video_pad|>"], videos=[np.zeros((2, 28, 28, 3), dtype=np.uint8)])


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "<|image_pad|>": 1, "<|video_pad|>": 2, "a": 3}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    return t
