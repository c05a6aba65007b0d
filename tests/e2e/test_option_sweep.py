# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Every vLLM option the support table does not mark "not ours" either serves a greedy request
correctly or is refused at start-up, before weights load, naming the option and the fix.

* Refused rows (engine arguments, quantization methods, kv_cache_dtype choices, VLLM_*
  variables): one child process builds a VllmConfig per row from vLLM's own CLI parser
  (``_option_probe_child.py``; config only, so no weights are ever loaded) and must fail with
  our message.
* Supported rows: the test the table cites; the rows without another test run here, on two
  short-lived engines (SmolLM2, float32, CPU emulation): fp8 (e4m3) KV cache with default
  options, and fp8_e5m2 KV cache with the "supported group" options. Both are judged against
  HF transformers greedy decoding with a float KV cache: every first token identical, at least
  half the continuations identical, the others diverging only to one of the float model's
  top-5 within MAX_GAP nats (the stated fp8 tolerance, below).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from engine import close_llm, generate_ids, greedy_params, make_llm
from option_probes import ARG_PROBES, ENV_PROBES, KWARG_PROBES
from parity import SUMMARY
from test_server_helpers import emulation_env
from vllm_ascend_platform import option_support as S
from vllm_ascend_platform.option_guards import EARLY_ARGS
from vllm_ascend_platform.option_table import REFUSED

HERE = Path(__file__).resolve().parent
N_TOKENS = 8
N_PROMPTS = 4


def _refused_cases() -> list[dict]:
    cases = []
    for r in S.rows():
        if r.status != REFUSED:
            continue
        if r.kind == S.KINDS[0]:
            argv, env, names = ARG_PROBES.get(r.name), {}, (S.flag(r.name), r.name)
            if r.name in KWARG_PROBES:
                argv = []
        elif r.kind == S.KINDS[1]:
            argv, env, names = ["--quantization", r.name], {}, (f"--quantization {r.name}",)
        elif r.kind == S.KINDS[2]:
            argv, env, names = ["--kv-cache-dtype", r.name], {}, ("--kv-cache-dtype",)
        else:
            argv, env, names = [], {r.name: ENV_PROBES.get(r.name, "")}, (r.name,)
        kwargs = KWARG_PROBES.get(r.name, {}) if r.kind == S.KINDS[0] else {}
        cases.append(dict(id=f"{r.kind}:{r.name}", argv=argv, env=env, kwargs=kwargs, row=r,
                          names=names))
    return cases


CASES = _refused_cases()


def test_every_refused_row_has_a_probe():
    missing = [c["id"] for c in CASES if c["argv"] is None or c["env"].get(c["row"].name) == ""]
    assert not missing, f"refused rows without a probe value in option_probes.py: {missing}"


@pytest.fixture(scope="module")
def probe_results(model_path):
    payload = json.dumps([{k: c[k] for k in ("id", "argv", "env", "kwargs")} for c in CASES])
    proc = subprocess.run([sys.executable, str(HERE / "_option_probe_child.py"), model_path],
                          input=payload, capture_output=True, text=True, timeout=600,
                          env=emulation_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_refused_at_startup_by_name(probe_results, case):
    got = probe_results[case["id"]]
    assert not got["ok"], f"{case['id']} started; the table says it is refused"
    error = got["error"]
    assert "vllm-ascend does not" in error, f"not our refusal: {error[-1500:]}"
    assert any(n in error for n in case["names"]), error[-1500:]
    assert case["row"].evidence[:60] in error, error[-1500:]


def test_early_refusals_come_before_vllms_own_checks(probe_results):
    """The rows vLLM 0.32 rejects itself while building the config (option_guards.EARLY_ARGS)
    are each probed, and refused by our check on EngineArgs (patch early-option-refusals) with
    our error type, not vLLM's ValueError."""
    cases = [c for c in CASES if c["row"].kind == S.KINDS[0] and c["row"].name in EARLY_ARGS]
    assert {c["row"].name for c in cases} == set(EARLY_ARGS)
    for case in cases:
        error = probe_results[case["id"]]["error"]
        assert error.startswith("UnsupportedFeatureError: vllm-ascend does not"), error[-1500:]


#: fp8 tolerance against the float KV cache, per format (mantissa bits: e4m3 3, e5m2 2, so a
#: stored K/V element is off by up to 2^-4 resp. 2^-3 of itself): at the first divergence from
#: HF float greedy our token must be in HF's top-5 and within MAX_GAP nats of HF's argmax.
#: Measured on this box (4 prompts x 8 tokens): vLLM's own CPU backend with fp8_e5m2 picks HF's
#: 4th choice at one step and changes one first token; with fp8 it diverges where ours does.
MAX_GAP = {"fp8": 0.05, "fp8_e5m2": 1.0}


def _serve_and_judge(llm, oracle, prompt_ids, kv_dtype: str, label: str, serve=generate_ids):
    prompts = prompt_ids[:N_PROMPTS]
    outs = serve(llm, prompts, N_TOKENS)
    identical, report = 0, []
    for k, (ids, out) in enumerate(zip(prompts, outs, strict=True)):
        got, ref = list(out.outputs[0].token_ids), oracle.greedy(ids, N_TOKENS)
        assert got[0] == ref.tokens[0], f"{label}: prompt {k} first token differs from float HF"
        if got == list(ref.tokens):
            identical += 1
            continue
        i = next(j for j in range(N_TOKENS) if got[j] != ref.tokens[j])
        lp = ref.logprobs[i]
        gap = float(lp[ref.tokens[i]] - lp[got[i]])
        report.append(f"prompt {k} step {i}: ours {got[i]}, HF {ref.tokens[i]}, HF top5 "
                      f"{ref.top(i, 5)}, gap {gap:.3g}")
        assert got[i] in ref.top(i, 5) and gap < MAX_GAP[kv_dtype], f"{label}: {report[-1]}"
    SUMMARY.append(f"{label}: {identical}/{len(prompts)} identical to float HF; " + "; ".join(report))
    assert identical >= len(prompts) // 2, report


def test_fp8_kv_cache_first_tokens_match_float(model_path, oracle, prompt_ids):
    llm = make_llm(model_path, kv_cache_dtype="fp8", max_model_len=512)
    try:
        assert llm.llm_engine.vllm_config.cache_config.cache_dtype == "fp8"
        _serve_and_judge(llm, oracle, prompt_ids, "fp8", "kv_cache_dtype=fp8")
    finally:
        close_llm(llm)


#: the supported rows with no test of their own, all non-default in one engine
SUPPORTED_GROUP = dict(
    kv_cache_dtype="fp8_e5m2", kv_cache_memory_bytes=64 << 20, async_scheduling=True,
    scheduling_policy="priority", enable_chunked_prefill=True, max_num_batched_tokens=64,
    long_prefill_token_threshold=32, max_num_scheduled_tokens=48, max_num_active_seqs=3,
    stream_interval=2, optimization_level=1, performance_mode="interactivity",
    disable_sliding_window=True, disable_cascade_attn=True, prefix_caching_hash_algo="sha256_cbor",
    language_model_only=True, max_parallel_loading_workers=1,
    # IR-op providers: the models layer's default is ["ascend", "native"] for both norms
    # (vllm_ascend_models.default_ir_op_priority); the user's lists go first (vLLM appends the
    # platform's, vllm/config/kernel.py KernelConfig.set_platform_defaults)
    ir_op_priority={"rms_norm": ["native"]},
    kernel_config={"ir_op_priority": {"fused_add_rms_norm": ["native"]}},
    worker_extension_cls="option_probes.WorkerProbe", enable_prompt_embeds=True,
)


def _serve_embeds(oracle):
    """Serve each prompt as its input embeddings (HF's embedding table = the checkpoint's)."""
    import torch
    from vllm.inputs import EmbedsPrompt

    table = oracle.model.get_input_embeddings()

    def serve(llm, prompts, n):
        with torch.inference_mode():
            embeds = [table(torch.tensor(p)).detach().clone() for p in prompts]
        return llm.generate([EmbedsPrompt(prompt_embeds=e) for e in embeds], greedy_params(n),
                            use_tqdm=False)

    return serve


def test_supported_group_serves_like_the_oracle(model_path, oracle, prompt_ids):
    llm = make_llm(model_path, max_model_len=512, **SUPPORTED_GROUP)
    try:
        _serve_and_judge(llm, oracle, prompt_ids, "fp8_e5m2",
                         "supported group + kv_cache_dtype=fp8_e5m2")
        # --enable-prompt-embeds: the same prompts as embeddings, through our runner's
        # inputs_embeds path (inherited from vLLM's GPUModelRunner)
        _serve_and_judge(llm, oracle, prompt_ids, "fp8_e5m2",
                         "supported group, prompts as embeddings", serve=_serve_embeds(oracle))
        # --worker-extension-cls is mixed into our worker (vllm/v1/worker/worker_base.py)
        mro = llm.collective_rpc("ascend_worker_mro")[0]
        assert "NPUWorker" in mro and "WorkerProbe" in mro, mro
        priority = llm.llm_engine.vllm_config.kernel_config.ir_op_priority
        assert priority.rms_norm[0] == "native" and priority.fused_add_rms_norm[0] == "native"
    finally:
        close_llm(llm)
