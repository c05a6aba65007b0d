# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""1P1D as users run it (docs/pd-disaggregation.md): a prefill and a decode ``vllm serve``
on 127.0.0.1 sharing an ``ExampleConnector`` directory, and ``scripts/pd_proxy.py`` routing
each request prefill (max_tokens 1) then decode, in CPU emulation. Greedy tokens through the
proxy equal one instance's; the decode instance reports the transferred prompt tokens as cached
(``usage.prompt_tokens_details.cached_tokens``, ``--enable-prompt-tokens-details``). When the
prefill instance dies, requests through the proxy fail at once with a 502 naming it, and the
decode instance keeps serving.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from packaging.version import Version
from test_server_helpers import Server, demo_model_path, emulation_env

from vllm_ascend import ports

vllm = pytest.importorskip("vllm")
if Version(Version(str(vllm.__version__)).base_version) < Version("0.34"):
    pytest.skip("KV connectors are served on vLLM >= 0.34 (Model Runner V2)",
                allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
BLOCK = 128
PROMPT = list(range(2000, 2300))  # 2 whole blocks transferred (ExampleConnector: len - 1)


@pytest.fixture(scope="module")
def model_path():
    return demo_model_path()


def _kv(role: str, path: Path) -> str:
    return json.dumps({"kv_connector": "ExampleConnector", "kv_role": role,
                       "kv_connector_extra_config": {"shared_storage_path": str(path)}})


@pytest.fixture(scope="module")
def pd(model_path, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pd")
    env = emulation_env()
    common = ("--enforce-eager", "--enable-prompt-tokens-details")
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(Server, model_path, tmp / f"{role}.log", env,
                               "--kv-transfer-config", _kv(role, tmp / "kv"), *common)
                   for role in ("kv_producer", "kv_consumer")]
        prefill, decode = (f.result() for f in futures)
    port = ports.free_port()
    proxy_log = open(tmp / "proxy.log", "w")
    proxy = subprocess.Popen(
        [sys.executable, str(REPO / "scripts" / "pd_proxy.py"), "--port", str(port),
         "--prefill", prefill.url, "--decode", decode.url, "--connect-timeout", "3"],
        stdout=proxy_log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proxy.poll() is None and time.monotonic() < deadline, (
                (tmp / "proxy.log").read_text())
            time.sleep(0.5)
    yield prefill, decode, f"http://127.0.0.1:{port}"
    proxy.terminate()
    proxy.wait(timeout=30)
    proxy_log.close()
    prefill.close()
    decode.close()


def _complete(url: str, model: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/completions", timeout=300, json={
        "model": model, "prompt": PROMPT, "max_tokens": 8, "temperature": 0,
        "ignore_eos": True})


def test_1p1d_through_the_proxy_gives_one_instances_tokens(pd, model_path):
    prefill, decode, proxy = pd
    via = _complete(proxy, model_path)
    assert via.status_code == 200, via.text
    body = via.json()
    # the decode instance computed only the prompt's tail: the transferred blocks were reused
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == (len(PROMPT) - 2) // BLOCK * BLOCK
    one = _complete(prefill.url, model_path).json()  # one instance, the whole request
    assert body["choices"][0]["text"] == one["choices"][0]["text"]
    assert body["usage"]["completion_tokens"] == 8


def test_a_dead_prefill_instance_fails_requests_by_name_and_decode_serves_on(pd, model_path):
    prefill, decode, proxy = pd
    prefill.close()
    start = time.monotonic()
    r = httpx.post(f"{proxy}/v1/completions", timeout=60, json={
        "model": model_path, "prompt": list(range(4000, 4200)), "max_tokens": 4})
    assert r.status_code == 502
    assert f"prefill instance {prefill.url} unreachable" in r.json()["error"]["message"]
    assert time.monotonic() - start < 30
    assert httpx.get(f"{decode.url}/health", timeout=10).status_code == 200
    assert _complete(decode.url, model_path).status_code == 200


def _proxy_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("pd_proxy", REPO / "scripts" / "pd_proxy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_proxy_names_an_unreachable_instance_at_once():
    """No server needed: nothing listens on either port; the request fails within the connect
    timeout naming the prefill instance, and /health names it too."""
    from fastapi.testclient import TestClient

    dead = [f"http://127.0.0.1:{ports.free_port()}" for _ in range(2)]
    app = _proxy_module().build_app(dead[0], dead[1], timeout=10, connect_timeout=2)
    with TestClient(app) as client:
        start = time.monotonic()
        r = client.post("/v1/chat/completions", json={"model": "m", "messages": [], "max_tokens": 4})
        assert r.status_code == 502
        assert r.json()["error"]["message"].startswith(f"prefill instance {dead[0]} unreachable")
        assert time.monotonic() - start < 10
        h = client.get("/health")
        assert h.status_code == 503 and dead[0] in h.json()["error"]["message"]


def test_the_proxy_answers_a_bad_body_with_a_400_before_calling_any_instance():
    """A body that is not JSON, or not a JSON object, is the client's error (400, named), as a
    vLLM server answers it; no instance is contacted (none listens here)."""
    from fastapi.testclient import TestClient

    dead = [f"http://127.0.0.1:{ports.free_port()}" for _ in range(2)]
    app = _proxy_module().build_app(dead[0], dead[1], timeout=10, connect_timeout=2)
    with TestClient(app) as client:
        r = client.post("/v1/completions", content=b'{"model": "m", "prompt": "hi",',
                        headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
        r = client.post("/v1/chat/completions", json=[1, 2])
        assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
        r = client.get("/v1/models")
        assert r.status_code == 502 and dead[1] in r.json()["error"]["message"]
