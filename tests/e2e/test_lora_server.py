# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multi-LoRA through vLLM's OpenAI server on our platform (CPU emulation, float32), driven with
the ``openai`` SDK.

One server for the module: ``--enable-lora --max-loras 2 --max-lora-rank 16`` with adapter
``a1`` named by ``--lora-modules`` and run-time loading switched on
(``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``, which adds ``/v1/load_lora_adapter`` and
``/v1/unload_lora_adapter``; vLLM 0.32 ``vllm/entrypoints/serve/lora/api_router.py``). Adapters
are made here by peft with non-zero random A and B (``lora_adapters.py``); expected tokens come
from HF transformers with the adapter merged by peft (float32). Bad adapters are 4xx answers and
the server keeps serving the other adapters: a rank above ``max_lora_rank`` and an adapter made
for another model's shapes are 400s naming the problem (the ``lora-load-endpoint`` patch,
``vllm_ascend_platform/options/lora_admission.py``; vLLM alone answers 500 / accepts the misfit), a
missing path is vLLM's 404. More adapters than ``max_loras`` in flight are queued by vLLM's
scheduler, not refused: every request returns its own adapter's tokens.
"""

from __future__ import annotations

import concurrent.futures as futures

import openai
import pytest
from lora_adapters import MergedOracle, make_adapter
from test_server_helpers import Server, emulation_env

N = 12
PROMPTS = ["The capital of France is", "def fibonacci(n):", "List three prime numbers:"]


@pytest.fixture(scope="module")
def adapters(model_path, tmp_path_factory):
    from tiny_qwen3 import save_tiny_qwen3

    root = tmp_path_factory.mktemp("lora_server")
    made = {f"a{i}": make_adapter(model_path, root / f"a{i}", seed=20 + i) for i in (1, 2, 3)}
    made["big"] = make_adapter(model_path, root / "big", seed=25, rank=32)
    # same module names (q_proj ... down_proj) but hidden size 64 instead of SmolLM2's 576
    made["foreign"] = make_adapter(save_tiny_qwen3(root / "tiny"), root / "foreign", seed=26)
    return made


@pytest.fixture(scope="module")
def server(model_path, adapters, tmp_path_factory):
    env = emulation_env(VLLM_ALLOW_RUNTIME_LORA_UPDATING="True")
    srv = Server(model_path, tmp_path_factory.mktemp("lora_server_log") / "server.log", env,
                 "--enforce-eager", "--gpu-memory-utilization", "0.3", "--enable-lora",
                 "--max-loras", "2", "--max-cpu-loras", "3", "--max-lora-rank", "16",
                 "--lora-modules", f"a1={adapters['a1']}")
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def client(server):
    return server.client(timeout=300)


@pytest.fixture(scope="module")
def expected(model_path, adapters, oracle):
    """HF float32 greedy tokens per (adapter or None, prompt index)."""
    cache: dict = {}

    def get(name: str | None, i: int) -> list[int]:
        if (name, i) not in cache:
            ref = oracle if name is None else MergedOracle(model_path, adapters[name])
            for j, text in enumerate(PROMPTS):
                cache[(name, j)] = ref.greedy(oracle.encode_text(text), N).tokens
        return cache[(name, i)]

    return get


def _tokens(client, model: str, i: int) -> list[int]:
    r = client.completions.create(model=model, prompt=PROMPTS[i], max_tokens=N, temperature=0,
                                  extra_body={"ignore_eos": True, "return_token_ids": True})
    return list(r.choices[0].token_ids)


def _post(client, path: str, body: dict) -> tuple[int, str]:
    """POST to a vLLM endpoint through the SDK; (HTTP status, body text)."""
    import httpx

    try:
        r = client.post(path, body=body, cast_to=httpx.Response)
    except openai.APIStatusError as exc:
        return exc.status_code, str(exc)
    return r.status_code, r.text


def _model_ids(client) -> set[str]:
    return {m.id for m in client.models.list().data}


def _still_serving(client, expected, base: str) -> None:
    assert _tokens(client, "a1", 0) == expected("a1", 0)
    assert _tokens(client, base, 1) == expected(None, 1)


@pytest.fixture(scope="module")
def base(client) -> str:
    return next(m for m in _model_ids(client) if m not in ("a1", "a2", "a3"))


def test_lora_modules_adapter_and_base(client, expected, base):
    assert "a1" in _model_ids(client)
    for i in range(len(PROMPTS)):
        assert _tokens(client, "a1", i) == expected("a1", i), f"a1, prompt {i}"
    got_base = [_tokens(client, base, i) for i in range(len(PROMPTS))]
    assert got_base == [expected(None, i) for i in range(len(PROMPTS))]
    assert sum(expected("a1", i) != got_base[i] for i in range(len(PROMPTS))) >= 2, \
        "the adapter barely changes the output"


def test_load_and_unload_at_run_time(client, adapters, expected, base):
    code, text = _post(client, "/load_lora_adapter",
                       {"lora_name": "a2", "lora_path": adapters["a2"]})
    assert code == 200, text
    assert "a2" in _model_ids(client)
    assert _tokens(client, "a2", 2) == expected("a2", 2)
    code, text = _post(client, "/unload_lora_adapter", {"lora_name": "a2"})
    assert code == 200, text
    assert "a2" not in _model_ids(client)
    with pytest.raises(openai.NotFoundError):
        _tokens(client, "a2", 2)
    _still_serving(client, expected, base)


@pytest.mark.parametrize("case", ["rank_above_max", "other_architecture", "missing_path"])
def test_bad_adapter_is_a_4xx_and_server_keeps_serving(client, adapters, expected, base, tmp_path,
                                                       case):
    # 400 with the reason for an adapter that exists; vLLM's own 404 (path redacted) otherwise
    path, status, needle = {
        "rank_above_max": (adapters["big"], 400, "max_lora_rank"),
        "other_architecture": (adapters["foreign"], 400, "does not fit the served model"),
        "missing_path": (str(tmp_path / "no-such-adapter"), 404, "bad_missing_path"),
    }[case]
    code, text = _post(client, "/load_lora_adapter", {"lora_name": f"bad_{case}",
                                                      "lora_path": path})
    assert code == status, f"{code}: {text}"
    assert needle in text, text
    assert f"bad_{case}" not in _model_ids(client)
    _still_serving(client, expected, base)


def test_more_adapters_than_max_loras_in_flight(client, adapters, expected, base):
    for name in ("a2", "a3"):
        code, text = _post(client, "/load_lora_adapter",
                           {"lora_name": name, "lora_path": adapters[name]})
        assert code == 200, text
    jobs = [(name, i) for name in ("a1", "a2", "a3") for i in range(len(PROMPTS))]
    jobs += [(base, i) for i in range(len(PROMPTS))]
    # 3 adapters + the base model at once with max_loras=2: vLLM's scheduler holds back the
    # requests whose adapter does not fit in this step and serves them when a slot frees
    with futures.ThreadPoolExecutor(len(jobs)) as pool:
        got = list(pool.map(lambda job: _tokens(client, *job), jobs))
    for (name, i), tokens in zip(jobs, got, strict=True):
        assert tokens == expected(None if name == base else name, i), f"{name}, prompt {i}"
