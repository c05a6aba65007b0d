# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host time per decode step: our MRv2 runner on vLLM 0.34 vs the former V1 runner on vLLM 0.33.

Each side is one Python interpreter with its own venv, and the plugin a side runs is the one
installed in that venv; this script only starts them and compares. This checkout supports vLLM
0.34 only (Model Runner V2); the V1 runner was deleted after commit
fe70cdfb1f0492b1520165a9df1a699f73dc6293, the last one that has it (vLLM 0.33 and 0.34 both
supported there). So the old side is an older checkout with its own venv, e.g.

    git worktree add ../vllm-ascend-v1 fe70cdfb1f0492b1520165a9df1a699f73dc6293
    (cd ../vllm-ascend-v1 && bash scripts/bootstrap.sh)   # that commit's default: vLLM 0.33.0
    bash scripts/bootstrap.sh                               # this checkout: vLLM 0.34.0

then ``--python-old ../vllm-ascend-v1/.venv/bin/python --python-new .venv/bin/python``. The
children start in a neutral directory, so neither imports this checkout by accident; each
result line names the vLLM version and runner class that actually ran. Sides run in the same
invocation, rounds interleaved (old, new, old, new, ...), best round per side. Modes: CPU emulation
(float32) and simulated NPU (float16, ``VLLM_ASCEND_SIMULATE_NPU=1``: the NPU branch over
``ascend_ops.simulator``). Model: SmolLM2-135M-Instruct (``vllm_ascend.demo_model``), eager,
in-process engine (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), greedy, ``ignore_eos``.

Method (unprofiled, ``perf_counter``, or with ``--clock thread`` ``time.thread_time``: CPU time
of the engine thread, which a loaded box disturbs less): the runner's ``execute_model`` and ``sample_tokens`` are
wrapped, and so are the model's ``forward`` and ``compute_logits``. For one generation,
``runner host`` = time in ``execute_model`` + ``sample_tokens`` minus time in the model forward
and the LM head: input preparation, attention metadata, sampling (a host computation in both CPU
modes), output bookkeeping. A generation of ``--tokens`` tokens minus one of 1 token leaves
``tokens - 1`` decode steps (prefill excluded); per round the median of ``--reps`` such pairs, per
step. Both sides must produce the same greedy tokens (checked).

    python benchmarks/runner_versions.py --python-old ../vllm-ascend-v1/.venv/bin/python \
        --python-new .venv/bin/python \
        [--modes emulate,simulate] [--batch 1,8] [--rounds 2] [--reps 3] [--tokens 16] \
        [--clock wall|thread]

Results are recorded in benchmarks/README.md ("Model Runner V2 vs V1").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Water boils at",
           "The three primary colors are", "In 1969, astronauts", "A haiku about autumn:",
           "The largest planet in the solar system", "To make a cup of tea, first"]

CHILD = r"""
import json, statistics, sys, time

TIMES = {}


CLOCK = time.perf_counter


def wrap(fn, label):
    def call(*a, **k):
        t0 = CLOCK()
        try:
            return fn(*a, **k)
        finally:
            TIMES[label] = TIMES.get(label, 0.0) + CLOCK() - t0
    return call


def main():
    model, batch, tokens, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    pool, reps = json.loads(sys.argv[5]), int(sys.argv[6])
    global CLOCK
    CLOCK = time.thread_time if sys.argv[7] == "thread" else time.perf_counter
    prompts = [pool[i % len(pool)] for i in range(batch)]
    import vllm
    from vllm import LLM, SamplingParams
    llm = LLM(model=model, dtype=dtype, max_model_len=512, enforce_eager=True, seed=0,
              max_num_seqs=max(batch, 1))
    core = llm.llm_engine.engine_core
    core = getattr(core, "engine_core", core)
    worker = core.model_executor.driver_worker
    r = getattr(worker, "worker", worker).model_runner
    model_mod = r.get_model()
    model_mod.forward = wrap(model_mod.forward, "fwd")
    model_mod.compute_logits = wrap(model_mod.compute_logits, "lm_head")
    r.execute_model = wrap(r.execute_model, "execute")
    r.sample_tokens = wrap(r.sample_tokens, "sample")

    def gen(n):
        p = SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
        TIMES.clear()
        t0 = time.perf_counter()
        outs = llm.generate(prompts, p, use_tqdm=False)
        wall = time.perf_counter() - t0
        runner = TIMES["execute"] + TIMES["sample"] - TIMES["fwd"] - TIMES.get("lm_head", 0.0)
        return wall, runner, [list(o.outputs[0].token_ids) for o in outs]

    gen(4)  # warm-up
    steps = tokens - 1
    walls, runners = [], []
    for _ in range(reps):
        w1, r1, _ = gen(1)
        wn, rn, toks = gen(tokens)
        walls.append(1e3 * (wn - w1) / steps)
        runners.append(1e3 * (rn - r1) / steps)
    print("RESULT " + json.dumps({
        "vllm": vllm.__version__, "runner": type(r).__module__ + "." + type(r).__qualname__,
        "step_ms": min(walls), "runner_host_ms": statistics.median(runners), "tokens": toks}))


if __name__ == "__main__":
    main()
"""

MODES = {"emulate": ("VLLM_ASCEND_EMULATE", "float32"),
         "simulate": ("VLLM_ASCEND_SIMULATE_NPU", "float16")}


def _run(python: str, mode: str, model: str, batch: int, tokens: int, reps: int,
         threads: int, clock: str = "wall") -> dict:
    var, dtype = MODES[mode]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), VLLM_ENABLE_V1_MULTIPROCESSING="0",
               HF_HUB_OFFLINE="1", **{var: "1"})
    env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
    for key in ("VLLM_TARGET_DEVICE", "VLLM_PLUGINS"):
        env.pop(key, None)
    # `python -c` puts the working directory first on sys.path: start in a neutral one, so each
    # side imports the plugin installed in its own venv (the old side: an older checkout's); a
    # relative interpreter path is taken from here first
    if os.sep in python:
        python = os.path.abspath(python)
    proc = subprocess.run(
        [python, "-c", CHILD, model, str(batch), str(tokens), dtype, json.dumps(PROMPTS),
         str(reps), clock], env=env, capture_output=True, text=True, timeout=1800,
        cwd=tempfile.gettempdir())
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{python} ({mode}, batch {batch}) failed (exit {proc.returncode}):\n"
                       f"{proc.stderr[-4000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="The old side (V1 runner, vLLM 0.33) cannot be built from this checkout: use a git "
               "worktree of fe70cdfb1f0492b1520165a9df1a699f73dc6293 (the last commit with Model "
               "Runner V1) bootstrapped into its own venv (its default vLLM is 0.33.0), e.g. "
               "git worktree add ../vllm-ascend-v1 fe70cdf && (cd ../vllm-ascend-v1 && bash "
               "scripts/bootstrap.sh); each side runs the plugin installed in its own venv.")
    parser.add_argument("--python-old", required=True,
                        help="python of the old side's venv: vLLM 0.33 with the vllm-ascend of "
                             "an older checkout that still has the V1 runner (e.g. "
                             "../vllm-ascend-v1/.venv/bin/python, see below)")
    parser.add_argument("--python-new", required=True,
                        help="python of this checkout's venv (vLLM 0.34, e.g. .venv/bin/python)")
    parser.add_argument("--modes", default="emulate,simulate")
    parser.add_argument("--batch", default="1,8")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                        help="runner host time by perf_counter (wall) or by time.thread_time "
                             "(CPU time of the engine thread: less sensitive to a loaded box)")
    args = parser.parse_args()
    modes = args.modes.split(",")
    bad = [m for m in modes if m not in MODES]
    if bad:
        parser.error(f"--modes: unknown {', '.join(bad)} (choose from {', '.join(MODES)})")
    if args.tokens < 2:
        parser.error(f"--tokens must be at least 2: decode steps are tokens - 1 (got {args.tokens})")
    for name in ("rounds", "reps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1 (got {getattr(args, name)})")
    from vllm_ascend import demo_model

    model = str(demo_model.prepare())
    print(f"load average at start: {os.getloadavg()}; ratio = new / old")
    for mode in modes:
        for batch in (int(b) for b in args.batch.split(",")):
            best: dict[str, dict] = {}
            hosts: dict[str, list[float]] = {"old": [], "new": []}
            for _ in range(args.rounds):
                for side, python in (("old", args.python_old), ("new", args.python_new)):
                    r = _run(python, mode, model, batch, args.tokens, args.reps, args.threads,
                             args.clock)
                    hosts[side].append(r["runner_host_ms"])
                    if side not in best or r["step_ms"] < best[side]["step_ms"]:
                        best[side] = r
            old, new = best["old"], best["new"]
            same = old["tokens"] == new["tokens"]
            h_old, h_new = min(hosts["old"]), min(hosts["new"])
            print(f"\n{mode} batch {batch} ({MODES[mode][1]}, {args.tokens} tokens; greedy tokens "
                  f"{'equal' if same else 'DIFFER'}; load {os.getloadavg()[0]:.1f})")
            print(f"  old: vLLM {old['vllm']} {old['runner']}")
            print(f"  new: vLLM {new['vllm']} {new['runner']}")
            print(f"  runner host ms/step  old {h_old:.3f}  new {h_new:.3f}  ratio {h_new / h_old:.2f}"
                  f"   (rounds old {hosts['old']} new {hosts['new']})")
            print(f"  step ms (best)       old {old['step_ms']:.3f}  new {new['step_ms']:.3f}  "
                  f"ratio {new['step_ms'] / old['step_ms']:.2f}")
            if not same:
                print("  WARNING: the two runners' greedy tokens differ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
