# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The msModelSlim W8A8_DYNAMIC SmolLM2 checkpoint served by vLLM's OpenAI server in CPU
emulation, WITHOUT ``--quantization``: docs/quantization.md promises that
``vllm serve <msModelSlim dir>`` detects
``quant_model_description.json`` and serves it as ``quantization="ascend"``.

One server for the module (test_server_helpers.Server, the engine settings of
test_quant_w8a8_dynamic.py), driven with the ``openai`` SDK. Checks:

* the log says ``quantization=ascend`` (the platform's detection line and vLLM's own
  engine-config line), and, independently of those claims, the weights it reports taking are
  the bytes of the checkpoint's int8 tensors and scales (read here with safetensors), well under
  half the float model's;
* a greedy one-token completion of ``_quant_cases.FIRST_PROMPT``: its top-5 log-probabilities
  equal the independent int8 oracle's (quant_oracle.py) by the rule of
  test_quant_w8a8_dynamic.py's first-token test (``assert_first_token_matches``), and they are
  far from the float model's (HF float32), so the int8 arithmetic is what answered. That
  module memoizes no tokens, and its 32-token greedy parity with the oracle is an xfail (its
  reason records why), so the first token is the rule it holds the engine to;
* ``max_tokens=-1`` is a 400 (vLLM 0.32 ``vllm/sampling_params.py`` requires ``max_tokens >= 1``)
  and the server then still serves the same answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import openai
import pytest
from _quant_cases import ENGINE, FIRST_PROMPT, assert_first_token_matches
from _serving_helpers import hf_next_logits
from quant_checkpoints import quantized
from test_server_helpers import Server, emulation_env


@pytest.fixture(scope="module")
def ckpt() -> str:
    return quantized("w8a8-dynamic")


@pytest.fixture(scope="module")
def server(ckpt, tmp_path_factory):
    # no --quantization: detection is under test (--max-model-len 512, --dtype float32 are
    # server_cmd's)
    srv = Server(ckpt, tmp_path_factory.mktemp("quant_server") / "server.log", emulation_env(),
                 "--enforce-eager", "--seed", str(ENGINE["seed"]),
                 "--max-num-batched-tokens", str(ENGINE["max_num_batched_tokens"]),
                 "--max-num-seqs", str(ENGINE["max_num_seqs"]),
                 "--gpu-memory-utilization", str(ENGINE["gpu_memory_utilization"]))
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def client(server):
    return server.client(timeout=300)


@pytest.fixture(scope="module")
def prompt(oracle) -> list[int]:
    return oracle.encode_text(FIRST_PROMPT)


def _first_token(client, prompt: list[int]) -> tuple[int, dict[int, float]]:
    """(greedy token, its top-5 log-probabilities by token id) of a one-token completion."""
    r = client.completions.create(model=client.models.list().data[0].id, prompt=prompt,
                                  max_tokens=1, temperature=0, logprobs=5,
                                  extra_body={"return_token_ids": True,
                                              "return_tokens_as_token_ids": True})
    choice = r.choices[0]
    top = {int(k.removeprefix("token_id:")): v
           for k, v in choice.logprobs.top_logprobs[0].items()}
    return choice.token_ids[0], top


@pytest.fixture(scope="module")
def first(client, prompt):
    return _first_token(client, prompt)


def _checkpoint_bytes(path: str, skip=()) -> int:
    from safetensors import safe_open

    total = 0
    for f in Path(path).glob("*.safetensors"):
        with safe_open(str(f), "pt") as st:
            for name in st.keys():
                if name not in skip:
                    t = st.get_slice(name)
                    shape = t.get_shape()
                    numel = 1
                    for d in shape:
                        numel *= d
                    total += numel * {"I8": 1, "F16": 2, "BF16": 2, "F32": 4, "I32": 4,
                                      "I64": 8, "F64": 8}[t.get_dtype()]
    return total


def test_served_as_ascend_with_int8_weights(server, ckpt, model_path):
    log = server.log
    # the platform's detection, then vLLM's own engine-config line (vllm/v1/engine/core.py)
    assert "holds quant_model_description.json (msModelSlim): serving it with " \
           "quantization='ascend'" in log, log[-3000:]
    assert re.search(r"Initializing a V1 LLM engine .* with config: .*, quantization=ascend,",
                     log), log[-3000:]
    # the weight bytes the model runner counts after loading, logged
    match = re.search(r"Model weights take (\d+\.\d+) GiB", log)
    assert match, log[-3000:]
    served = float(match.group(1)) * (1 << 30)
    # expected from the checkpoint itself (msModelSlim's int8 weights, float32 scales and
    # offsets, float32 embedding); lm_head.weight is saved too but tied to the embedding
    # (config.json tie_word_embeddings), so vLLM keeps one copy
    assert json.loads((Path(ckpt) / "config.json").read_text())["tie_word_embeddings"]
    want = _checkpoint_bytes(ckpt, skip={"lm_head.weight"})
    assert abs(served - want) <= 0.02 * want, (served, want)
    # a float load of the same model would take ~2.4x as much (float32: 4 bytes a parameter)
    assert served < 0.45 * _checkpoint_bytes(model_path, skip={"lm_head.weight"})


def test_greedy_first_token_equals_the_oracle_not_the_float_model(first, prompt, ckpt,
                                                                   model_path, oracle):
    import torch

    token, ours = first
    assert token == max(ours, key=ours.get)
    assert_first_token_matches(model_path, ckpt, prompt, ours)
    float_lp = torch.log_softmax(hf_next_logits(oracle, prompt).double(), -1)
    # an int8 oracle run matches to 5e-3 (the exact one to 1e-4 on an Intel box); the float model
    # is this far away
    assert max(abs(v - float(float_lp[t])) for t, v in ours.items()) > 0.05


def test_bad_request_is_a_400_and_the_server_still_serves(server, client, prompt, first):
    with pytest.raises(openai.BadRequestError) as err:
        client.completions.create(model=client.models.list().data[0].id, prompt=prompt,
                                  max_tokens=-1, temperature=0)
    assert err.value.status_code == 400 and "max_tokens" in str(err.value)
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
    token, ours = _first_token(client, prompt)
    assert token == first[0] and ours.keys() == first[1].keys()
    assert all(abs(ours[t] - first[1][t]) <= 1e-4 for t in ours)
