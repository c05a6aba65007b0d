# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The OpenAI server with ``--kv-cache-dtype fp8`` (which used to start and then answer HTTP 500
once its engine died in the KV-cache write): it serves, a bad request is a 4xx that leaves it
serving, and an engine core that does die takes the server down cleanly — the process exits by
itself, ``/health`` stops answering 200, and the cause is logged once, not once per request.

vLLM's own contract (vllm/entrypoints/launchers/launcher.py ``terminate_if_errored``, with
``VLLM_KEEP_ALIVE_ON_ENGINE_DEATH`` unset): an errored engine makes uvicorn exit.
"""

from __future__ import annotations

import signal
import time

import httpx
import openai
import psutil
import pytest
from test_server_helpers import Server, demo_model_path, emulation_env

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(demo_model_path(), tmp_path_factory.mktemp("fp8") / "server.log", emulation_env(),
                 "--kv-cache-dtype", "fp8", "--enforce-eager")
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def client(server):
    return server.client(timeout=300)


def _complete(client, **kw):
    args = dict(model=client.models.list().data[0].id, prompt=PROMPT, max_tokens=4, temperature=0)
    return client.completions.create(**{**args, **kw})


def test_fp8_kv_cache_serves_and_bad_requests_are_4xx(server, client, oracle):
    first = _complete(client)
    ids = oracle.encode_text(PROMPT)
    want = oracle.tokenizer.decode(oracle.greedy(ids, 4).tokens)
    assert first.choices[0].text == want  # float-KV HF greedy (4 tokens)
    for bad in (dict(max_tokens=-1), dict(logprobs=10_000)):
        with pytest.raises(openai.BadRequestError):
            _complete(client, **bad)
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
    assert _complete(client).choices[0].text == want
    assert "Traceback" not in server.log


def _engine_core(server) -> psutil.Process:
    kids = psutil.Process(server.proc.pid).children(recursive=True)
    cores = [p for p in kids if "EngineCore" in " ".join([p.name(), *p.cmdline()])]
    assert cores, [(p.pid, p.name()) for p in kids]
    return cores[0]


def test_dead_engine_takes_the_server_down_cleanly(server, client):
    core = _engine_core(server)
    core.send_signal(signal.SIGKILL)
    statuses = []
    deadline = time.monotonic() + 120
    while server.proc.poll() is None and time.monotonic() < deadline:
        try:
            statuses.append(httpx.get(f"{server.url}/health", timeout=5).status_code)
        except httpx.HTTPError:
            statuses.append("refused")
        time.sleep(1)
    assert server.proc.poll() is not None, f"server still up 120 s after its engine died: {statuses}"
    assert 200 not in statuses[2:], statuses  # never healthy again once the death is seen
    log = server.log
    assert "Engine core" in log or "EngineCore" in log, log[-3000:]
    assert log.count("EngineDeadError") <= 2, log[-6000:]
