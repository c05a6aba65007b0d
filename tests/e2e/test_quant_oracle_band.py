# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The first-token check of the msModelSlim modules (``_quant_cases.assert_first_token_matches``)
can fail: a small scheme error is explained by no oracle run.

The check accepts our top-5 first-token log-probabilities when one oracle run, exact or with
float32-sized relative noise on the quantizers' inputs, gives all five within 5e-3 nats. Here the
"engine" is an oracle with one scheme parameter wrong by the smallest amount a bug would make
(W8A8 static: the activation offset one int8 step off; W8A8_DYNAMIC: the weight scales 1 % off);
its exact log-probabilities must be explained by no run of the true oracle, while the true
oracle's own perturbed runs are. Oracle only (HF transformers), no engine: a few seconds.
"""

from __future__ import annotations

import pytest
import torch
from _quant_cases import FIRST_PROMPT, explaining_run, first_token_runs
from quant_checkpoints import quantized


def _wrong(module, scheme: str) -> None:
    if scheme == "W8A8":
        module.in_offset += 1.0
    else:
        module.w_scale = module.w_scale * 1.01


@pytest.mark.parametrize("kind, scheme", [("w8a8", "W8A8"), ("w8a8-dynamic", "W8A8_DYNAMIC")])
def test_a_scheme_error_is_explained_by_no_oracle_run(model_path, kind, scheme):
    from quant_oracle import _FakeQuantLinear, load_oracle
    from transformers import AutoTokenizer

    ckpt = quantized(kind)
    ids = AutoTokenizer.from_pretrained(model_path)(FIRST_PROMPT).input_ids
    runs = first_token_runs(model_path, ckpt, ids)
    top5 = runs[0][2].topk(5).indices.tolist()

    # a perturbed run of the true oracle is explained (by itself at least)
    noise, seed, lp = runs[-1]
    assert explaining_run(runs, {t: float(lp[t]) for t in top5}) is not None

    wrong = load_oracle(model_path, ckpt)
    quantized_linears = [m for m in wrong.modules() if isinstance(m, _FakeQuantLinear)]
    assert quantized_linears and all(m.scheme == scheme for m in quantized_linears)
    for m in quantized_linears:
        _wrong(m, scheme)
    with torch.inference_mode():
        bad = torch.log_softmax(wrong(input_ids=torch.tensor([ids])).logits[0, -1].double(), -1)
    ours = {t: float(bad[t]) for t in top5}
    found = explaining_run(runs, ours)
    exact = runs[0][2]
    assert found is None, (found, {t: (v, float(exact[t])) for t, v in ours.items()})
