# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Test-side helpers of the simulated-NPU e2e tests (test_simulated_npu*.py).

* :func:`run_child` runs ``_sim_npu_child.py`` (the engines) in a child process in
  simulated-NPU mode and returns its results; a child that fails or hangs fails the test with
  the tail of its log.
* :func:`teacher_forced` is the HF transformers oracle: it runs the float32 HF model once over
  prompt + our generated tokens (teacher forcing) and judges each generated position: our token
  agrees when it is HF's top-1 there or its log-probability is within ``tol`` nats of the top-1's.
  HF transformers' own model classes are independent of vLLM and of every layer of ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
#: generous per-child limit; the whole simulated suite is sized to a few minutes on 2 cores
CHILD_TIMEOUT_S = 900


def run_child(spec: dict, work: Path, timeout: int = CHILD_TIMEOUT_S,
              env: dict[str, str] | None = None) -> dict:
    """Run the engines of ``spec`` (see ``_sim_npu_child.py``) in one child process, with
    ``env`` added to its environment.

    Returns:
        ``{run name: {"tokens": [[int]], "facts": {...}}}``.
    """
    from _sim_npu_child import child_env

    work.mkdir(parents=True, exist_ok=True)
    spec_path, out_path, log_path = work / "spec.json", work / "out.json", work / "child.log"
    spec_path.write_text(json.dumps(spec))
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run(
                [sys.executable, str(HERE / "_sim_npu_child.py"), str(spec_path), str(out_path)],
                stdout=log, stderr=subprocess.STDOUT, env={**child_env(), **(env or {})}, cwd=str(HERE),
                timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    if rc != 0 or not out_path.exists():
        tail = log_path.read_text()[-6000:]
        raise AssertionError(f"simulated-NPU child failed (rc={rc}); log tail:\n{tail}")
    return json.loads(out_path.read_text())


@dataclass
class Agreement:
    """Per-position verdicts of one batch against the teacher-forced HF oracle."""

    agreed: int = 0
    total: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agreed / self.total if self.total else 0.0


@torch.inference_mode()
def teacher_forced(model_path: str, prompts: list[list[int]], outputs: list[list[int]],
                   tol: float = 0.05, model_cls=None) -> Agreement:
    """Judge every generated token of ``outputs`` against HF float32, teacher-forced.

    ``model_cls``: the transformers class to load (default ``AutoModelForCausalLM``; see
    ``hf_oracle.HFOracle`` for when to name it)."""
    from transformers import AutoModelForCausalLM

    model = (model_cls or AutoModelForCausalLM).from_pretrained(model_path, dtype=torch.float32,
                                                                attn_implementation="eager").eval()
    result = Agreement()
    for k, (prompt, gen) in enumerate(zip(prompts, outputs, strict=True)):
        if not gen:
            continue
        ids = torch.tensor([list(prompt) + list(gen)], dtype=torch.long)
        logits = model(input_ids=ids, use_cache=False).logits[0].to(torch.float32)
        # the logits at position j predict token j + 1
        lp = torch.log_softmax(logits[len(prompt) - 1: len(prompt) - 1 + len(gen)], dim=-1)
        for i, tok in enumerate(gen):
            top = int(torch.argmax(lp[i]))
            gap = float(lp[i, top] - lp[i, tok])
            result.total += 1
            if tok == top or gap <= tol:
                result.agreed += 1
            else:
                result.misses.append(f"prompt {k} position {i}: ours {tok}, HF top-1 {top}, "
                                     f"gap {gap:.3f} nats")
    del model
    return result


def assert_agreement(result: Agreement, label: str, min_rate: float = 0.97) -> None:
    assert result.total > 0, f"{label}: nothing generated"
    assert result.rate >= min_rate, (
        f"{label}: {result.agreed}/{result.total} positions agree with HF float32 "
        f"(need {min_rate:.0%}):\n  " + "\n  ".join(result.misses))

