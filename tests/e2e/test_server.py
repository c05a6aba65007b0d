# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM's OpenAI server on our platform in CPU emulation (README.md, "The two commands").

One server per module (SmolLM2-135M-Instruct, float32, ``--max-model-len 512``),
driven with the ``openai`` SDK. Expected tokens and logprobs come from HF
transformers' forward pass on the same checkpoint; the HTTP statuses are vLLM
0.34's own documented behaviour. The same server start also covers a valid ``additional_config``
(vLLM's own additional_config keys, one with a value Ascend has no kernel for) and
the plugin selection (``VLLM_PLUGINS`` naming our two plugins, logged). The server runs with
n-gram speculative decoding (``--speculative-config``), so the HF-greedy and logprob checks
also cover verification through our rejection sampler, and vLLM's spec-decode counters are
read from ``/metrics`` (docs/spec-decode.md). It also runs vLLM's stack-dump watchdog
(``--watchdog-config``, vllm/utils/watch_dog.py), which the engine core starts in its process.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import httpx
import openai
import pytest
from test_server_helpers import Server, demo_model_path, emulation_env

MAX_LEN = 512
TOKENS = list(range(1000, 1600))  # ordinary vocabulary ids of SmolLM2 (vocab 49152)
K = 3  # n-gram draft tokens per step
NGRAM = {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_max": 3,
         "prompt_lookup_min": 2}


@pytest.fixture(scope="module")
def model_path():
    return demo_model_path()


#: --watchdog-config of the module's server (dump_dir is added per run)
WATCHDOG = {"timeout": 600, "check_interval": 5}


@pytest.fixture(scope="module")
def server(model_path, tmp_path_factory):
    env = emulation_env(VLLM_PLUGINS="ascend,ascend_layers")
    tmp = tmp_path_factory.mktemp("server")
    watchdog = {**WATCHDOG, "dump_dir": str(tmp / "watchdog")}
    srv = Server(model_path, tmp / "server.log", env,
                 "--kda-prefill-backend", "auto", "--kda-decode-backend", "auto",
                 "--gdn-prefill-backend", "triton", "--enforce-eager",
                 "--speculative-config", json.dumps(NGRAM),
                 "--watchdog-config", json.dumps(watchdog))
    srv.watchdog_dir = tmp / "watchdog"
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def client(server):
    return server.client(timeout=120)


@pytest.fixture(scope="module")
def hf(model_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=torch.float32).eval()
    return tok, model


def _hf_greedy(hf, ids: list[int], n: int) -> tuple[list[int], list[float]]:
    """HF greedy continuation of ``ids``: tokens and each chosen token's log-probability."""
    import torch

    _, model = hf
    out, logps = list(ids), []
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([out])).logits[0, -1].float()
            lp = torch.log_softmax(logits, -1)
            nxt = int(torch.argmax(lp))
            out.append(nxt)
            logps.append(float(lp[nxt]))
    return out[len(ids):], logps


def _still_healthy(server, client, model):
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
    r = client.completions.create(model=model, prompt="Hello", max_tokens=2, temperature=0)
    assert r.choices[0].text


@pytest.fixture(scope="module")
def model(client):
    return client.models.list().data[0].id


def test_runs_on_our_platform_with_plugins_logged(server):
    log = server.log
    # exactly which entry points load, and the layers the general plugin registered
    assert ("VLLM_PLUGINS='ascend,ascend_layers'; loading vllm.platform_plugins: [ascend]; "
            "vllm.general_plugins: [ascend_layers]") in log
    assert "general plugin 'ascend_layers' registered layers: attention" in log
    assert "Ascend platform active (emulation mode)" in log


def test_watchdog_runs_in_the_engine_core(server, client, model):
    # vLLM's engine core starts the watchdog with the configured settings before its busy loop
    # (vllm/v1/engine/core.py run_engine_core -> vllm/utils/watch_dog.py start_watch_dog), and
    # each engine step feeds it: serving through our platform never stalls it into a dump
    _still_healthy(server, client, model)
    log = server.log
    assert (f"[Watchdog]Start with timeout={WATCHDOG['timeout']} check_interval="
            f"{WATCHDOG['check_interval']} dump_dir={server.watchdog_dir}") in log, log[-3000:]
    assert "[Watchdog]Started thread for engine_0" in log
    assert not list(server.watchdog_dir.glob("VLLM_STACK_DUMP_*"))


def test_upstream_additional_config_keys_start_and_unsupported_value_warns(server):
    log = server.log
    assert "gdn_prefill_backend='triton'" in log and "ignoring it" in log
    assert "kda_prefill_backend" not in log.split("ignoring it")[0].rsplit("\n", 1)[-1]


def test_chat_plain_matches_hf_greedy(client, model, hf):
    tok, _ = hf
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=12,
                                       temperature=0)
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    want, _ = _hf_greedy(hf, ids, r.usage.completion_tokens)
    assert r.usage.prompt_tokens == len(ids)
    text = tok.decode(want, skip_special_tokens=True)
    assert r.choices[0].message.content.strip() == text.strip()


def test_chat_streamed_equals_plain(client, model):
    messages = [{"role": "user", "content": "Name a colour."}]
    plain = client.chat.completions.create(model=model, messages=messages, max_tokens=10,
                                           temperature=0)
    chunks = list(client.chat.completions.create(model=model, messages=messages, max_tokens=10,
                                                 temperature=0, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    assert streamed == plain.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == \
        plain.choices[0].finish_reason


def test_completion_logprobs_match_hf(client, model, hf):
    tok, _ = hf
    prompt = "The capital of France is"
    r = client.completions.create(model=model, prompt=prompt, max_tokens=5, temperature=0,
                                  logprobs=5)
    ids = tok(prompt)["input_ids"]
    want, want_lp = _hf_greedy(hf, ids, 5)
    lp = r.choices[0].logprobs
    assert r.choices[0].text == tok.decode(want)
    for pos, (got, ref) in enumerate(zip(lp.token_logprobs, want_lp, strict=True)):
        assert math.isfinite(got) and got <= 0
        assert abs(got - ref) < 1e-3, (pos, got, ref)
        top = list(lp.top_logprobs[pos].values())
        assert top == sorted(top, reverse=True) and len(top) == 5


def test_health_and_metrics(server, client, model):
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
    client.completions.create(model=model, prompt="One two three", max_tokens=3, temperature=0)
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith("vllm:prompt_tokens_total")]
    assert values and sum(values) >= 3


def _spec_counters(server) -> dict[str, float]:
    """vLLM's spec-decode counters (``vllm/v1/spec_decode/metrics.py``) from ``/metrics``,
    parsed with prometheus_client; per-position counts under ``"pos<i>"``."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.startswith("vllm:spec_decode_num_") or not s.name.endswith("_total"):
                continue
            key = s.name[len("vllm:spec_decode_num_"):-len("_total")]
            if "position" in s.labels:
                key = f"pos{s.labels['position']}"
            out[key] = out.get(key, 0.0) + s.value
    return out


def test_spec_decode_metrics_count_accepted_ngram_drafts(server, client, model):
    """A self-repeating prompt: n-gram drafts are proposed and some accepted. Rejection
    sampling accepts a prefix of each draft, so position i is accepted at most as often as
    position i - 1 and the positions add up to the accepted total."""
    before = _spec_counters(server)
    prompt = "one two three four five six seven eight. one two three four five six seven eight. one"
    client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0)
    after = _spec_counters(server)
    d = {key: after[key] - before.get(key, 0.0) for key in after}
    assert {"drafts", "draft_tokens", "accepted_tokens"} <= d.keys(), sorted(after)
    assert 0 < d["accepted_tokens"] <= d["draft_tokens"] <= K * d["drafts"], d
    per_pos = [d[f"pos{i}"] for i in range(K)]
    assert sum(per_pos) == d["accepted_tokens"], d
    assert per_pos == sorted(per_pos, reverse=True), d


# ---- over-length and invalid input is a 400, never an outage -----------------------
def _status(fn):
    try:
        fn()
    except openai.APIStatusError as exc:
        return exc.status_code, str(exc)
    return 200, ""


def test_prompt_over_limit(server, client, model):
    code, msg = _status(lambda: client.completions.create(model=model, prompt=TOKENS[:600],
                                                          max_tokens=5))
    assert code == 400 and str(MAX_LEN) in msg
    _still_healthy(server, client, model)


def test_max_tokens_lowered_to_fit(server, client, model):
    r = client.completions.create(model=model, prompt=TOKENS[:400], max_tokens=200,
                                  temperature=0, extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == MAX_LEN - 400
    _still_healthy(server, client, model)


def test_full_prompt_leaves_no_room(server, client, model):
    code, _ = _status(lambda: client.completions.create(model=model, prompt=TOKENS[:512],
                                                        max_tokens=1))
    assert code == 400
    _still_healthy(server, client, model)


def test_one_below_limit_succeeds(server, client, model):
    r = client.completions.create(model=model, prompt=TOKENS[:511], max_tokens=1)
    assert r.usage.completion_tokens == 1 and r.usage.prompt_tokens == 511
    _still_healthy(server, client, model)


def test_empty_prompt(server, client, model):
    code, msg = _status(lambda: client.completions.create(model=model, prompt="", max_tokens=5))
    assert code == 400 and "prompt" in msg
    _still_healthy(server, client, model)


@pytest.mark.parametrize("max_tokens", [0, -1])
def test_nonpositive_max_tokens(server, client, model, max_tokens):
    code, msg = _status(lambda: client.completions.create(model=model, prompt="Hi",
                                                          max_tokens=max_tokens))
    assert code == 400 and "max_tokens" in msg
    _still_healthy(server, client, model)


def _png_data_url() -> str:
    import base64
    import io

    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((28, 28, 3), dtype=np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_image_to_a_text_only_model(server, client, model):
    """An image sent to SmolLM2 (text only) is a 400 naming the problem; text still serves."""
    content = [{"type": "image_url", "image_url": {"url": _png_data_url()}},
               {"type": "text", "text": "What is this?"}]
    code, msg = _status(lambda: client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": content}], max_tokens=4))
    assert code == 400, msg
    low = msg.lower()
    assert "image" in low or "multimodal" in low or "multi-modal" in low, msg
    _still_healthy(server, client, model)


def test_chat_message_over_limit(server, client, model):
    messages = [{"role": "user", "content": " hello" * 600}]
    code, msg = _status(lambda: client.chat.completions.create(model=model, messages=messages,
                                                               max_tokens=5))
    assert code == 400 and str(MAX_LEN) in msg
    _still_healthy(server, client, model)


# ---- offline: a dev build of the installed supported vLLM release starts -------------
OFFLINE = textwrap.dedent("""
    import json, sys
    import vllm
    vllm.__version__ = sys.argv[2]  # before the platform plugin runs
    from vllm import LLM, SamplingParams

    if __name__ == "__main__":
        llm = LLM(model=sys.argv[1], max_model_len=512, dtype="float32", enforce_eager=True)
        sp = SamplingParams(max_tokens=4, temperature=0)
        valid = [{"prompt_token_ids": list(range(1000, 1000 + n))} for n in (5, 50, 100)]
        over = {"prompt_token_ids": list(range(1000, 1600))}
        result = {"platform": type(__import__("vllm.platforms").platforms.current_platform).__name__}
        try:
            llm.generate(valid[:1] + [over] + valid[1:], sp)
            result["raised"] = None
        except Exception as exc:
            result["raised"] = f"{type(exc).__name__}: {exc}"
        outs = llm.generate(valid, sp)
        result["served"] = [len(o.outputs[0].token_ids) for o in outs]
        print("RESULT " + json.dumps(result))
""")


@pytest.fixture(scope="module")
def offline(model_path, tmp_path_factory):
    script = tmp_path_factory.mktemp("offline") / "offline.py"
    script.write_text(OFFLINE)
    env = emulation_env(VLLM_ENABLE_V1_MULTIPROCESSING="0")
    import vllm

    # a dev build of the installed release line (0.34.1.dev12+gabc123 on 0.34)
    line = ".".join(str(vllm.__version__).split(".")[:2])
    proc = subprocess.run([sys.executable, str(script), model_path, f"{line}.1.dev12+gabc123"],
                          env=env, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):]), proc.stdout + proc.stderr


def test_vllm_dev_build_of_supported_release_starts(offline):
    result, output = offline
    assert result["platform"] == "NPUPlatform"
    assert "do not support it" not in output  # the version check's refusal


def test_offline_overlong_prompt_raises_then_engine_serves(offline):
    result, _ = offline
    assert result["raised"] is not None and "512" in result["raised"]
    assert result["served"] == [4, 4, 4]
