# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The HF transformers oracle of the multimodal e2e tests (test_multimodal_*.py)."""

from __future__ import annotations

import torch


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
