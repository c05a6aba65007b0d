# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""An image sent to a text-only model (SmolLM2) through the OpenAI server is a 400 naming the
problem, and the server keeps serving text. One server for the module."""

from __future__ import annotations

import base64
import io

import httpx
import numpy as np
import pytest
from test_server_helpers import Server, demo_model_path, emulation_env


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(demo_model_path(), tmp_path_factory.mktemp("text_only") / "server.log",
                 emulation_env(), "--enforce-eager")
    yield srv
    srv.close()


def _image_url() -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((28, 28, 3), dtype=np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _chat(server, content) -> httpx.Response:
    body = {"model": httpx.get(f"{server.url}/v1/models").json()["data"][0]["id"],
            "messages": [{"role": "user", "content": content}], "max_tokens": 4,
            "temperature": 0}
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=300)


def test_image_to_a_text_only_model_is_a_400_and_text_still_serves(server):
    resp = _chat(server, [{"type": "image_url", "image_url": {"url": _image_url()}},
                          {"type": "text", "text": "What is this?"}])
    assert resp.status_code == 400, resp.text
    text = resp.text.lower()
    assert "image" in text or "multimodal" in text or "multi-modal" in text, resp.text
    ok = _chat(server, "The capital of France is")
    assert ok.status_code == 200, ok.text
    assert server.proc.poll() is None
