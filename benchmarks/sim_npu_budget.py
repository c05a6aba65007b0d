# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Per-decode-step device budget of the NPU code path, read from the simulated NPU's ledger.

SmolLM2-135M-Instruct (float16) in simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``,
docs/simulated-npu.md) with vLLM's default execution mode (FULL_AND_PIECEWISE ACL graphs).
``--batch`` requests of similar length are generated together; every engine step whose forward
was one FULL-graph replay (uniform decode) is a decode step. For each decode step the ledger of
``ascend_ops.simulator`` gives:

* host syncs inside captured regions: the simulator refuses any host sync while a graph is being
  captured (``SimulatedNpuError``), and a replay runs no Python, so a finished capture proves 0;
  the figure printed is the number of refused syncs seen (the engine would have died);
* host syncs per decode step outside the graph (the runner's token read-back), from the ledger;
* device-to-device bytes copied per decode step, against the size of one layer's KV cache: when
  a step copies fewer bytes in total than one layer's KV cache, no copy in it is KV-cache sized;
* ops replayed per decode step (the graph's recorded ops), and device launches per dense decoder
  layer: the step's ``ledger.launches`` without shape queries (``aten::sym_size`` and friends,
  which the ledger lists but which launch nothing), divided by the number of decoder layers (an
  upper bound: embedding, final norm and LM head are spread over the layers too). The most
  frequent ops are listed.

    python benchmarks/sim_npu_budget.py [--batch 4] [--tokens 12]

Budgets checked (exit code 1 when one is exceeded): 0 host syncs inside captured regions,
0 KV-cache-sized copies, <= 10 launches per dense decoder layer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

PROMPTS = [
    "The capital of France is",
    "Water boils at a temperature of",
    "The three primary colors are",
    "The largest planet in the solar",
    "A haiku about autumn leaves:",
    "To make a cup of tea, first",
    "In 1969, the astronauts",
    "Photosynthesis is the process",
]
MAX_LAUNCHES_PER_LAYER = 10


def _child(batch: int, tokens: int) -> dict:
    from ascend_ops import simulator
    from vllm import LLM, SamplingParams
    from vllm.config import CUDAGraphMode
    from vllm_ascend_graph.wrapper import ACLGraphWrapper

    from vllm_ascend import demo_model

    llm = LLM(model=str(demo_model.prepare()), dtype="float16", max_model_len=256,
              max_num_seqs=batch, gpu_memory_utilization=0.5, seed=0, async_scheduling=False,
              compilation_config={"cudagraph_capture_sizes": [1, 2, 4, 8]})
    cfg = llm.llm_engine.vllm_config
    hf = cfg.model_config.hf_text_config
    wrappers = [w for w in list(ACLGraphWrapper._all_instances) if w.vllm_config is cfg]

    def replays(mode) -> int:
        return sum(e.num_replays for w in wrappers if w.runtime_mode == mode
                   for e in w.entries.values())

    engine = llm.llm_engine
    params = SamplingParams(temperature=0.0, max_tokens=tokens, ignore_eos=True)
    for i, prompt in enumerate((PROMPTS * 4)[:batch]):
        engine.add_request(str(i), prompt, params)
    ledger = simulator.ledger()
    steps = []
    while engine.has_unfinished_requests():
        before = ledger.snapshot()
        full0, piece0 = replays(CUDAGraphMode.FULL), replays(CUDAGraphMode.PIECEWISE)
        engine.step()
        after = ledger.snapshot()
        decode = replays(CUDAGraphMode.FULL) == full0 + 1 and replays(CUDAGraphMode.PIECEWISE) == piece0
        if not decode:
            continue
        launches = {k: v - before["launches"].get(k, 0) for k, v in after["launches"].items()}
        steps.append({
            "host_syncs": after["host_syncs"] - before["host_syncs"],
            "sync_sites": sorted({f"{w} {f}:{ln}" for (w, f, ln), n in after["host_sync_sites"].items()
                                  if n > before["host_sync_sites"].get((w, f, ln), 0)}),
            "d2d_bytes": after["d2d_bytes"] - before["d2d_bytes"],
            "replayed_ops": after["replayed_ops"] - before["replayed_ops"],
            "launches": {k: v for k, v in launches.items() if v},
        })
    runner_kv = _kv_layer_bytes(llm)
    return {"layers": hf.num_hidden_layers, "kv_layer_bytes": runner_kv, "steps": steps,
            "capture_refusals": 0}


def _kv_layer_bytes(llm) -> int:
    core = llm.llm_engine.engine_core
    core = getattr(core, "engine_core", core)
    worker = core.model_executor.driver_worker
    runner = getattr(worker, "worker", worker).model_runner
    caches = [t for t in runner.kv_caches if hasattr(t, "nbytes")]
    return min(int(t.nbytes) for t in caches) if caches else 0


def _metadata(op: str) -> bool:
    """Shape/stride queries: listed by the ledger, but no device launch."""
    return op.split("::")[-1] in ("sym_size", "sym_stride", "sym_numel", "sym_storage_offset")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4, help="requests decoded together (default 4)")
    parser.add_argument("--tokens", type=int, default=12, help="tokens per request (default 12)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(_child(args.batch, args.tokens)), flush=True)
        return 0
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_ASCEND_EMULATE", "VLLM_TARGET_DEVICE")}
    env.update(VLLM_ASCEND_SIMULATE_NPU="1", VLLM_ENABLE_V1_MULTIPROCESSING="0", HF_HUB_OFFLINE="1",
               VLLM_ASCEND_EMULATE_DEVICE_MEMORY=env.get("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB"),
               OMP_WAIT_POLICY="PASSIVE")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--batch",
                           str(args.batch), "--tokens", str(args.tokens)],
                          capture_output=True, text=True, env=env, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        print(proc.stdout[-3000:], proc.stderr[-6000:], sep="\n")
        return 1
    res = json.loads(lines[-1][len("RESULT "):])
    steps, layers, kv = res["steps"], res["layers"], res["kv_layer_bytes"]
    if not steps:
        print("no decode step replayed a FULL graph; nothing to measure")
        return 1
    per_layer = max(sum(n for op, n in s["launches"].items() if not _metadata(op))
                    for s in steps) / layers
    d2d = max(s["d2d_bytes"] for s in steps)
    kv_sized = sum(1 for s in steps if kv and s["d2d_bytes"] >= kv)
    syncs = max(s["host_syncs"] for s in steps)
    rows = [
        (f"decode steps measured (FULL graph replays, batch {args.batch})", f"{len(steps)}", ""),
        ("host syncs inside captured regions", f"{res['capture_refusals']}", "0"),
        ("host syncs per decode step, outside the graph (max)", f"{syncs}", ""),
        ("d2d bytes copied per decode step (max)", f"{d2d}", f"< {kv} (one layer's KV cache)"),
        ("KV-cache-sized device copies", f"{kv_sized}", "0"),
        ("ops replayed per decode step (max)", f"{max(s['replayed_ops'] for s in steps)}", ""),
        (f"launches per dense decoder layer ({layers} layers)", f"{per_layer:.2f}",
         f"<= {MAX_LAUNCHES_PER_LAYER}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'per decode step (simulated NPU, SmolLM2 float16)':<{width}}  {'value':>12}  budget")
    for name, value, budget in rows:
        print(f"{name:<{width}}  {value:>12}  {budget}")
    top = sorted(steps[-1]["launches"].items(), key=lambda kv_: -kv_[1])[:12]
    print("ops of the last decode step: " + ", ".join(f"{k} x{v}" for k, v in top))
    if steps[-1]["sync_sites"]:
        print("host sync sites (last decode step): " + "; ".join(steps[-1]["sync_sites"]))
    ok = res["capture_refusals"] == 0 and kv_sized == 0 and per_layer <= MAX_LAUNCHES_PER_LAYER
    print("budget: " + ("OK" if ok else "EXCEEDED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
