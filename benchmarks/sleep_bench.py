# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sleep-mode timing: time of ``sleep(level)`` and ``wake_up()`` and the bytes each moved.

SmolLM2-135M-Instruct, one engine (``enable_sleep_mode=True``, eager), in CPU emulation
(``VLLM_ASCEND_EMULATE=1``, float32) or on the simulated NPU (``--simulated``, float16). For each
level the engine is put to sleep and woken ``--rounds`` times (after one warm-up cycle); reported
per level: median sleep and wake seconds, bytes copied device -> host and host -> device, device
bytes freed (from the backend), and the drop of the used device memory as the platform reports
it (``ascend_ops.device.mem_get_info``: RSS in emulation, accounted bytes when simulated). Level 2
wakes with ``wake_up()`` (weights come back zeroed; no reload is timed). One JSON line per level.

    python benchmarks/sleep_bench.py [--rounds 3] [--simulated]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _used() -> int:
    from ascend_ops import device

    free, total = device.mem_get_info()
    return total - free


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--simulated", action="store_true", help="simulated NPU instead of emulation")
    args = ap.parse_args()
    os.environ.pop("VLLM_TARGET_DEVICE", None)
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the backend is readable in-process
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.simulated:
        os.environ.pop("VLLM_ASCEND_EMULATE", None)
        os.environ["VLLM_ASCEND_SIMULATE_NPU"] = "1"
    else:
        os.environ["VLLM_ASCEND_EMULATE"] = "1"
    from vllm import LLM

    from vllm_ascend import demo_model

    llm = LLM(model=str(demo_model.prepare()), dtype="float16" if args.simulated else "float32",
              max_model_len=512, enforce_eager=True, gpu_memory_utilization=0.3, seed=0,
              enable_sleep_mode=True)
    backend = llm.llm_engine.model_executor.driver_worker.worker.sleep_mode_backend
    mode = "simulated-npu" if args.simulated else "cpu-emulation"
    for level in (1, 2):
        llm.sleep(level=level)
        llm.wake_up()
        sleeps, wakes, drops = [], [], []
        for _ in range(args.rounds):
            before = _used()
            t0 = time.perf_counter()
            llm.sleep(level=level)
            sleeps.append(time.perf_counter() - t0)
            drops.append(before - _used())
            slept = dict(backend.last_bytes)
            t0 = time.perf_counter()
            llm.wake_up()
            wakes.append(time.perf_counter() - t0)
            woke = dict(backend.last_bytes)
        print(json.dumps({
            "mode": mode, "level": level, "rounds": args.rounds,
            "sleep_s": round(statistics.median(sleeps), 4),
            "wake_s": round(statistics.median(wakes), 4),
            "bytes_to_host": slept.get("to_host", 0), "bytes_freed": slept.get("freed", 0),
            "bytes_to_device": woke.get("to_device", 0),
            "reported_used_drop_bytes": int(statistics.median(drops)),
        }), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
