# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM 0.34's Model Runner V2 (``NPUModelRunnerV2``, prototype) on the simulated NPU.

SmolLM2-135M-Instruct, float16, eager, in a child process in simulated-NPU mode
(``_sim_npu_mrv2_child.py``): our attention backends and ``ascend_ops`` run their NPU branch over
``ascend_ops.simulator`` while MRv2's Triton kernels run as the host stand-ins
(``vllm_ascend_platform/host/mrv2_kernels.py``, ``mrv2_spec_decode.py``). Six prompts (5 to ~100 tokens, prefilled in
chunks of up to 64 tokens next to running decodes; ``max_num_seqs`` 4 < 6 requests).

Two engines in one child: ``plain`` and ``ngram`` (n-gram speculative decoding, 3 draft tokens,
greedy verification; vLLM 0.34's default async scheduling).

Checks: the NPU path ran (simulator active, every op on the ``npu`` backend, the runner is
``NPUModelRunnerV2``); weights and KV cache are accounted on the simulated device; greedy tokens
of both engines agree with HF transformers float32 teacher-forced at >= 97 % of positions; and
**a decode step makes exactly one host sync the ledger sees outside the host stand-ins**: vLLM's
``AsyncOutput`` waiting for the sampled tokens' device-to-host copy
(``vllm/v1/worker/gpu/async_utils.py``), the same count as the former V1 runner had on vLLM 0.33 (its
async-output event). Syncs inside the stand-ins (``bool(tensor)``, ``repeat_interleave``
without ``output_size``, ``nonzero``) are counted but not held to it: on an NPU those kernels are
vLLM's Triton ones (triton-ascend), which read nothing back.

What the ledger cannot see: ``.cpu()`` / ``.tolist()`` of a device tensor (simulated device
tensors are host tensors, so they dispatch nothing outside a capture). The one such read our
step makes by design is counted separately: with drafts under async scheduling MRv2's
``seq_lens_cpu_upper_bound`` assumes every draft was accepted, so the attention metadata reads
the device ``seq_lens`` once per build (``vllm_ascend_attention.host_lengths.seq_lens_host``);
without drafts it uses vLLM's host copy.

Needs vLLM >= 0.34 (run it with the branch's ``.venv034``); skipped on older vLLM.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _sim_npu import assert_agreement, teacher_forced

#: the child reads the simulator's ledger and memory: nothing here runs on a real NPU
pytestmark = pytest.mark.sim_only
HERE = Path(__file__).resolve().parent
#: the host stand-ins of MRv2's Triton kernels (step kernels; speculative decoding's)
STAND_INS = ("vllm_ascend_platform/host/mrv2_kernels.py",
             "vllm_ascend_platform/host/mrv2_spec_decode.py")
MAX_TOKENS = [3, 5, 7, 9, 11, 13]
ENGINE = dict(dtype="float16", max_model_len=512, max_num_seqs=4, max_num_batched_tokens=64,
              enable_chunked_prefill=True, enforce_eager=True, gpu_memory_utilization=0.5)
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2,
         "prompt_lookup_max": 4}
RUNS = ("plain", "ngram")


@pytest.fixture(scope="module")
def prompts(prompt_ids) -> list[list[int]]:
    return prompt_ids[: len(MAX_TOKENS)]


@pytest.fixture(scope="module")
def run(model_path, prompts, tmp_path_factory) -> dict:
    from _sim_npu_child import child_env

    work = tmp_path_factory.mktemp("mrv2_sim")
    spec_path, out_path, log_path = work / "spec.json", work / "out.json", work / "child.log"
    spec_path.write_text(json.dumps(
        {"model": model_path, "prompts": prompts, "max_tokens": MAX_TOKENS, "engine": ENGINE,
         "runs": [{"name": "plain"}, {"name": "ngram", "engine": {"speculative_config": NGRAM}}]}))
    env = {**child_env(), "VLLM_ASCEND_SKIP_VERSION_CHECK": "1"}
    with open(log_path, "w") as log:
        proc = subprocess.run([sys.executable, str(HERE / "_sim_npu_mrv2_child.py"), str(spec_path),
                               str(out_path)], stdout=log, stderr=subprocess.STDOUT, env=env,
                              cwd=str(HERE), timeout=900)
    if proc.returncode != 0 or not out_path.exists():
        raise AssertionError(f"MRv2 simulated-NPU child failed (rc={proc.returncode}):\n"
                             + log_path.read_text()[-6000:])
    return json.loads(out_path.read_text())


@pytest.mark.parametrize("name", RUNS)
def test_ran_mrv2_on_the_simulated_npu_path(run, name):
    facts = run[name]["facts"]
    assert facts["simulated"]
    assert facts["runner"] == "vllm_ascend_platform.worker.model_runner_v2.NPUModelRunnerV2"
    assert facts["backends"] == ["npu"], f"ops ran on {facts['backends']}"


def test_weights_and_kv_cache_held_on_the_simulated_device(run):
    facts = run["plain"]["facts"]
    held = facts["held"]
    assert set(held) == {"weights", "kv_cache"}, held
    assert held["weights"] > 100 << 20  # ~135M float16 parameters
    assert held["kv_cache"] > 0
    assert facts["allocated"] >= held["weights"] + held["kv_cache"]


@pytest.mark.parametrize("name", RUNS)
def test_greedy_tokens_agree_with_hf(run, model_path, prompts, name):
    tokens = run[name]["tokens"]
    assert [len(t) for t in tokens] == MAX_TOKENS
    assert_agreement(teacher_forced(model_path, prompts, tokens), f"MRv2 simulated NPU, {name}")


@pytest.mark.parametrize("name", RUNS)
def test_a_decode_step_syncs_the_host_once(run, name):
    decode = [s for s in run[name]["facts"]["steps"] if s["decode_only"]]
    assert len(decode) >= 3, "too few decode-only steps to judge"
    for k, step in enumerate(decode):
        ours = [s for s in step["syncs"] if not any(m in s[1] for m in STAND_INS)]
        assert sum(s[3] for s in ours) == 1, f"{name} decode step {k}: {ours}"
        what, file, _, _ = ours[0]
        assert what == "Event.synchronize()" and file.endswith("vllm/v1/worker/gpu/async_utils.py"), ours


def test_host_kv_lengths_read_the_device_only_with_async_drafts(run):
    plain, ngram = run["plain"]["facts"], run["ngram"]["facts"]
    assert set(plain["host_lengths"]) == {"exact"}, plain["host_lengths"]
    if ngram["async_scheduling"]:
        assert set(ngram["host_lengths"]) == {"device_read"}, ngram["host_lengths"]
    else:
        assert set(ngram["host_lengths"]) == {"exact"}, ngram["host_lengths"]
