# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The OpenAI server (``vllm serve``, CPU emulation, float32) with a tiny Qwen2.5-VL: an image
chat request (``image_url`` as a ``data:`` URL) returns HF transformers' greedy tokens, and bad
media (an undecodable image, an unsupported media type, more images than
``--limit-mm-per-prompt``) are each a 400 naming the problem, after which the server still
serves. One server for the module.
"""

from __future__ import annotations

import base64
import io
import json

import httpx
import numpy as np
import pytest
from test_server_helpers import Server, emulation_env

MAX_TOKENS = 8


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, model_path) -> str:
    from mm_checkpoints import save_tiny_qwen2_5_vl

    return save_tiny_qwen2_5_vl(tmp_path_factory.mktemp("qwen2_5_vl_server"), model_path)


@pytest.fixture(scope="module")
def server(checkpoint, tmp_path_factory):
    srv = Server(checkpoint, tmp_path_factory.mktemp("mm_server") / "server.log", emulation_env(),
                 "--limit-mm-per-prompt", json.dumps({"image": 1, "video": 0}),
                 "--max-num-seqs", "4")
    yield srv
    srv.close()


def _png(seed: int, h: int = 60, w: int = 90) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    rng = np.random.RandomState(seed)
    Image.fromarray((rng.rand(h, w, 3) * 255).astype("uint8")).save(buf, format="PNG")
    return buf.getvalue()


def _data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def _chat(server, urls: list[str], text: str = "Describe the picture.") -> httpx.Response:
    content = [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    content.append({"type": "text", "text": text})
    body = {"model": httpx.get(f"{server.url}/v1/models").json()["data"][0]["id"],
            "messages": [{"role": "user", "content": content}], "max_tokens": MAX_TOKENS,
            "temperature": 0, "return_token_ids": True}
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=300)


def test_image_chat_returns_hf_tokens(server, checkpoint, tmp_path):
    from mm_oracle import HFQwenVL

    image = _png(0)
    resp = _chat(server, [_data_url(image)])
    assert resp.status_code == 200, resp.text
    body = resp.json()
    prompt_ids, tokens = body["prompt_token_ids"], body["choices"][0]["token_ids"]
    path = tmp_path / "image.png"
    path.write_bytes(image)
    want = HFQwenVL(checkpoint).greedy(prompt_ids, [str(path)], len(tokens))
    assert len(tokens) == MAX_TOKENS and tokens == want, f"ours {tokens}, HF {want}"


#: vLLM 0.34's own messages (vllm/multimodal/media/image.py, the per-prompt limit check in
#: vllm/multimodal/processing/context.py). A data URL of another media type under ``image_url`` is decoded as
#: an image and refused as undecodable: vLLM's message does not name the media type.
@pytest.mark.parametrize("urls,problem", [
    ([_data_url(b"\x89PNG\r\n\x1a\nnot really a png")], "failed to load image"),
    ([_data_url(b"hello", media_type="text/plain")], "failed to load image"),
    ([_data_url(_png(1)), _data_url(_png(2))], "at most 1 image"),
], ids=["undecodable", "unsupported-media-type", "over-the-limit"])
def test_bad_media_is_a_400_and_the_server_keeps_serving(server, urls, problem):
    resp = _chat(server, urls)
    assert resp.status_code == 400, resp.text
    assert problem.lower() in resp.text.lower(), resp.text
    ok = _chat(server, [_data_url(_png(3))])
    assert ok.status_code == 200, ok.text
    assert server.proc.poll() is None
