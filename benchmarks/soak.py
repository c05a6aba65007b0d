# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Soak benchmark: concurrent streaming clients against the OpenAI server in emulation.

Starts ``vllm serve`` (this environment's console script) on loopback (127.0.0.1 only) with the
plugin in CPU emulation (``VLLM_ASCEND_EMULATE=1``) on the SmolLM2 demo checkpoint, then runs
``--clients`` concurrent clients, each sending streaming ``/v1/completions`` requests back to back
until ``--duration`` seconds have passed (bounded also by ``--max-requests`` in total; requests
in flight at the deadline finish, each bounded by ``--request-timeout``). It
reports requests done, errors, p50/p99 request latency and time to first token (seconds), and
the server's resident memory (RSS of the server process and its children, MiB) at start,
middle and end. The server is stopped at the end. Benchmark only, not a CI test.

Usage::

    python benchmarks/soak.py                      # 64 clients, 120 s
    python benchmarks/soak.py --clients 8 --duration 20 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

from vllm_ascend.demo import vllm_console_script
from vllm_ascend.ports import free_port

HOST = "127.0.0.1"  # loopback only, by design
PROMPTS = [
    "The capital of France is",
    "Write one sentence about the ocean:",
    "def fibonacci(n):",
    "Three primary colors are",
    "In 1969, the first humans landed on",
    "The quick brown fox",
]


def _rss_mib(pid: int) -> float:
    import psutil

    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def _start_server(args, port: int) -> subprocess.Popen:
    env = {**os.environ, "VLLM_ASCEND_EMULATE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("VLLM_TARGET_DEVICE", None)
    # vLLM's GPU-path worker (ours, since an out-of-tree platform is not is_cpu()) drops torch
    # to 1 thread unless OMP_NUM_THREADS is set.
    env.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    cmd = [vllm_console_script(), "serve", args.model,
           "--served-model-name", "soak", "--dtype", "float32", "--max-model-len",
           str(args.max_model_len), "--enforce-eager", "--host", HOST, "--port", str(port),
           "--max-num-seqs", str(args.clients), "--gpu-memory-utilization", "0.5"]
    log = open(args.server_log, "w")  # noqa: SIM115 - lives as long as the server
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


async def _wait_healthy(session, base: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before becoming healthy")
        try:
            async with session.get(f"{base}/health") as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not listening yet
            pass
        await asyncio.sleep(2)
    raise TimeoutError(f"server not healthy after {timeout:.0f} s")


async def _client(idx: int, session, base: str, args, stats: dict, deadline: float) -> None:
    import aiohttp

    n = 0
    while time.monotonic() < deadline and stats["started"] < args.max_requests:
        stats["started"] += 1
        body = {"model": "soak", "prompt": PROMPTS[(idx + n) % len(PROMPTS)],
                "max_tokens": args.max_tokens, "temperature": 0.8, "stream": True}
        n += 1
        t0 = time.monotonic()
        ttft = None
        chunks = 0
        try:
            timeout = aiohttp.ClientTimeout(total=args.request_timeout)
            async with session.post(f"{base}/v1/completions", json=body, timeout=timeout) as r:
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status}: {(await r.text())[:200]}")
                async for raw in r.content:
                    line = raw.decode().strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    if ttft is None:
                        ttft = time.monotonic() - t0
                    chunks += 1
            if chunks == 0:
                raise RuntimeError("stream ended without any chunk")
            stats["latency"].append(time.monotonic() - t0)
            stats["ttft"].append(ttft)
            stats["done"] += 1
        except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
            stats["errors"] += 1
            if len(stats["error_samples"]) < 5:
                stats["error_samples"].append(repr(exc)[:300])


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def _soak(args) -> dict:
    import aiohttp

    port = free_port()
    base = f"http://{HOST}:{port}"
    proc = _start_server(args, port)
    try:
        conn = aiohttp.TCPConnector(limit=args.clients + 4)
        async with aiohttp.ClientSession(connector=conn) as session:
            t_start = time.monotonic()
            await _wait_healthy(session, base, proc, args.startup_timeout)
            startup_s = time.monotonic() - t_start
            rss = {"start": _rss_mib(proc.pid)}
            stats = {"started": 0, "done": 0, "errors": 0, "latency": [], "ttft": [],
                     "error_samples": []}
            t0 = time.monotonic()
            deadline = t0 + args.duration

            async def sample_middle():
                await asyncio.sleep(args.duration / 2)
                rss["middle"] = _rss_mib(proc.pid)

            mid = asyncio.create_task(sample_middle())
            await asyncio.gather(*(_client(i, session, base, args, stats, deadline)
                                   for i in range(args.clients)))
            await mid
            elapsed = time.monotonic() - t0
            rss["end"] = _rss_mib(proc.pid)
            async with session.get(f"{base}/health") as r:
                healthy_after = r.status == 200
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    growth = (rss["end"] - rss["middle"]) / rss["middle"] * 100 if rss.get("middle") else None
    return {
        "clients": args.clients, "duration_s": round(elapsed, 1),
        "server_startup_s": round(startup_s, 1),
        "requests_done": stats["done"], "errors": stats["errors"],
        "error_samples": stats["error_samples"],
        "requests_per_s": round(stats["done"] / elapsed, 2),
        "latency_p50_s": _round(_pct(stats["latency"], 50)),
        "latency_p99_s": _round(_pct(stats["latency"], 99)),
        "ttft_p50_s": _round(_pct(stats["ttft"], 50)),
        "ttft_p99_s": _round(_pct(stats["ttft"], 99)),
        "rss_mib": {k: round(v, 1) for k, v in rss.items()},
        "rss_growth_middle_to_end_pct": _round(growth),
        "healthy_after": healthy_after,
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _default_model() -> str:
    from vllm_ascend import demo_model

    return str(demo_model.prepare())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="checkpoint dir (default: the SmolLM2 demo)")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    ap.add_argument("--max-requests", type=int, default=100_000, help="hard cap, all clients")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--max-model-len", type=int, default=512)
    ap.add_argument("--request-timeout", type=float, default=300.0)
    ap.add_argument("--startup-timeout", type=float, default=900.0)
    ap.add_argument("--server-log", default="soak-server.log")
    ap.add_argument("--json", default=None, help="also write the summary here")
    args = ap.parse_args(argv)
    if args.clients < 1 or args.duration <= 0 or args.duration > 3600:
        ap.error("--clients must be >= 1 and --duration in (0, 3600] seconds")
    args.model = args.model or _default_model()
    summary = asyncio.run(_soak(args))
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    ok = summary["errors"] == 0 and summary["healthy_after"]
    growth = summary["rss_growth_middle_to_end_pct"]
    return 0 if ok and (growth is None or growth < 5.0) else 1


if __name__ == "__main__":
    sys.exit(main())
