# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``pip install vllm-ascend[all]`` from the wheelhouse only: doctor is clean and SmolLM2 answers.

The generated tokens are checked against HF transformers' greedy decoding of the same converted
checkpoint (``LlamaForCausalLM``, float32, eager attention), computed in this test process: an
implementation that shares no code with vLLM or with our layers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PLUGIN_ENV
from venvs import PREPARED

QUESTION = "What is the capital of France?"
NEW_TOKENS = 12
LAYER_DISTS = ["ascend-ops", "vllm-ascend-platform", "vllm-ascend-attention",
               "vllm-ascend-models", "vllm-ascend-comm", "vllm-ascend-graph"]


@pytest.fixture(scope="module")
def model_dir():
    from vllm_ascend import demo_model  # the prepared venv's copy: only for the cached path

    return demo_model.prepare()  # cached after the first demo/e2e run (idempotent, offline)


def _hf_greedy(model_dir, prompt_ids: list[int], n: int) -> list[int]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    ids = torch.tensor([prompt_ids])
    out, past = [], None
    with torch.no_grad():
        for _ in range(n):  # plain KV-cached loop: no generation config can stop it early
            step = model(input_ids=ids, past_key_values=past, use_cache=True)
            past = step.past_key_values
            nxt = int(step.logits[0, -1].argmax())
            out.append(nxt)
            ids = torch.tensor([[nxt]])
    return out


def test_installed_from_the_wheelhouse_not_the_checkout(full_venv):
    code = ("import json, importlib.metadata as m\n"
            f"print(json.dumps({{d: [m.version(d), str(m.distribution(d).locate_file(''))] "
            f"for d in {LAYER_DISTS + ['vllm-ascend']!r}}}))")
    found = json.loads(full_venv.run("-c", code).stdout)
    for dist, (version, where) in found.items():
        assert version == "0.2.0", (dist, version)
        assert where.startswith(str(full_venv.site)), f"{dist} comes from {where}"
    # no editable install of ours leaked in through the linked .venv
    direct = full_venv.run("-c", "import vllm_ascend_platform, ascend_ops._C as c; "
                                 "print(vllm_ascend_platform.__file__); print(c.__file__)").stdout
    assert all(line.startswith(str(full_venv.site)) for line in direct.split()), direct
    assert str(PREPARED) not in direct


def test_doctor_is_clean(full_venv):
    proc = full_venv.run("vllm-ascend", "doctor", "--json", env=PLUGIN_ENV)
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["problems"] == [], report["problems"]
    layers = {row["dist"]: row for row in report["layers"]}
    assert sorted(layers) == sorted(LAYER_DISTS)
    assert all(row["version"] == "0.2.0" and row["ok"] for row in layers.values()), layers


def test_smollm2_answers_like_hf_transformers(full_venv, model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    enc = tok.apply_chat_template([{"role": "user", "content": QUESTION}],
                                  add_generation_prompt=True, tokenize=True)
    prompt_ids = [int(i) for i in (enc["input_ids"] if hasattr(enc, "keys") else enc)]
    request = json.dumps({"prompt_ids": prompt_ids, "max_tokens": NEW_TOKENS})
    probe = str(Path(__file__).with_name("generate_probe.py"))
    proc = full_venv.run(probe, str(model_dir), request, env=PLUGIN_ENV, timeout=600)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["platform"] == "vllm_ascend_platform.platform.NPUPlatform"
    assert set(result["layers"]) == {"attention", "models", "comm", "graph"}
    expected = _hf_greedy(model_dir, prompt_ids, NEW_TOKENS)
    assert result["tokens"] == expected, (tok.decode(result["tokens"]), tok.decode(expected))
    assert "Paris" in tok.decode(result["tokens"])
