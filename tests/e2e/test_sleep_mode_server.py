# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sleep mode through the OpenAI server's dev-mode endpoints (``VLLM_SERVER_DEV_MODE=1``):
``POST /sleep?level=N``, ``POST /wake_up``, ``GET /is_sleeping`` (vLLM 0.32,
``vllm/entrypoints/serve/sleep``). Oracle: the server's own greedy completion before sleeping.
A bad level is an error response and the server keeps serving.
"""

from __future__ import annotations

import httpx
import pytest
from test_server_helpers import Server, emulation_env

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def server(model_path, tmp_path_factory):
    env = emulation_env(VLLM_SERVER_DEV_MODE="1")
    srv = Server(model_path, tmp_path_factory.mktemp("sleep_server") / "server.log", env,
                 "--enable-sleep-mode", "--enforce-eager", "--gpu-memory-utilization", "0.3")
    yield srv
    srv.close()


def _complete(srv) -> str:
    r = httpx.post(f"{srv.url}/v1/completions", timeout=120, json={
        "model": srv_model(srv), "prompt": PROMPT, "max_tokens": 8, "temperature": 0.0})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def srv_model(srv) -> str:
    return httpx.get(f"{srv.url}/v1/models", timeout=10).json()["data"][0]["id"]


def _sleeping(srv) -> bool:
    r = httpx.get(f"{srv.url}/is_sleeping", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["is_sleeping"]


def test_sleep_wake_endpoints(server):
    reference = _complete(server)
    assert not _sleeping(server)
    for level in (1, 2):
        r = httpx.post(f"{server.url}/sleep", params={"level": level}, timeout=120)
        assert r.status_code == 200, r.text
        assert _sleeping(server)
        if level == 2:
            assert httpx.post(f"{server.url}/wake_up", params={"tags": "weights"},
                              timeout=120).status_code == 200
            r = httpx.post(f"{server.url}/collective_rpc", timeout=300,
                           json={"method": "reload_weights"})
            assert r.status_code == 200, r.text
        r = httpx.post(f"{server.url}/wake_up", timeout=120)
        assert r.status_code == 200, r.text
        assert not _sleeping(server)
        assert _complete(server) == reference


def test_bad_level_is_an_error_and_server_keeps_serving(server):
    reference = _complete(server)
    r = httpx.post(f"{server.url}/sleep", params={"level": 3}, timeout=120)
    assert r.status_code >= 400
    httpx.post(f"{server.url}/wake_up", timeout=120)
    assert not _sleeping(server)
    assert _complete(server) == reference
