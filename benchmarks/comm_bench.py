# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""all_reduce / all_gather latency and bandwidth: NPUCommunicator (emulation) vs raw gloo.

Two processes (torch.multiprocessing spawn, gloo over a TCP store on 127.0.0.1) time, for each
message size, the same collective twice in the same run: through
``vllm_ascend_comm.communicator.NPUCommunicator`` (CPU emulation path) and through
``torch.distributed`` directly on the same gloo group. The two are interleaved in rounds
(ours, raw, raw, ours, ...) so drift of a shared 2-core box hits both alike; the best round
of each is reported (preemption only ever adds time, so the minimum is the least noisy). ratio =
ours / raw latency (the target band: 0.8 .. 1.25).

Bandwidth is the bus bandwidth convention of nccl-tests: all_reduce moves 2(n-1)/n of the
buffer per rank, all_gather (n-1)/n of the output.

    python benchmarks/comm_bench.py [--sizes 1K,64K,1M,8M] [--iters 10] [--rounds 30]
"""

from __future__ import annotations

import argparse
import socket
import time
from datetime import timedelta

WORLD = 2


def _parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


def _size_list(text: str) -> list[int]:
    """argparse type of ``--sizes``: comma-separated positive byte counts, optional K/M/G."""
    sizes = []
    for item in text.split(","):
        try:
            size = _parse_size(item)
        except (ValueError, IndexError):
            size = 0
        if size <= 0:
            raise argparse.ArgumentTypeError(f"{item!r} is not a positive size such as 64K or 1M")
        sizes.append(size)
    return sizes


def _time(fn, iters: int, barrier) -> float:
    barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    barrier()
    return (time.perf_counter() - t0) / iters


def _worker(rank: int, port: int, sizes: list[int], iters: int, rounds: int, queue) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD, timeout=timedelta(seconds=120))
    from vllm_ascend_comm.communicator import NPUCommunicator

    group = dist.new_group([0, 1], backend="gloo")
    cpu_group = dist.new_group([0, 1], backend="gloo")
    comm = NPUCommunicator(cpu_group, torch.device(f"cpu:{rank}"), group, unique_name="tp:bench")

    def barrier():
        dist.barrier(cpu_group)

    rows = []
    for nbytes in sizes:
        x = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        cases = {
            "all_reduce": (lambda x=x: comm.all_reduce(x),
                           lambda x=x: dist.all_reduce(x, group=group)),
            # raw allocates its output too: vLLM's all_gather returns a new tensor
            "all_gather": (lambda x=x: comm.all_gather(x, dim=0),
                           lambda x=x: dist.all_gather_into_tensor(
                               torch.empty(x.numel() * WORLD, dtype=x.dtype), x, group=group)),
        }
        for op, (ours, raw) in cases.items():
            ours(), raw()  # warm-up
            t_ours, t_raw = [], []
            for i in range(rounds):
                # alternate which goes first: the first timing after a size change or a
                # barrier tends to pay for cache/scheduler warm-up on a 2-core box
                if i % 2 == 0:
                    t_ours.append(_time(ours, iters, barrier))
                    t_raw.append(_time(raw, iters, barrier))
                else:
                    t_raw.append(_time(raw, iters, barrier))
                    t_ours.append(_time(ours, iters, barrier))
            rows.append((op, nbytes, min(t_ours), min(t_raw)))
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def _busbw(op: str, nbytes: int, seconds: float) -> float:
    factor = 2 * (WORLD - 1) / WORLD if op == "all_reduce" else (WORLD - 1)
    return nbytes * factor / seconds / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--sizes", default="1K,64K,1M,8M", type=_size_list,
                    help="message sizes per rank (bytes, K/M/G)")
    ap.add_argument("--iters", type=int, default=10, help="calls per timed round")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds (best taken)")
    args = ap.parse_args()
    sizes = args.sizes

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, port, sizes, args.iters, args.rounds, queue))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    rows = queue.get(timeout=1800)
    for p in procs:
        p.join(timeout=60)

    print(f"{'op':<11}{'bytes':>10}{'ours us':>11}{'raw us':>11}{'ours GB/s':>11}{'raw GB/s':>10}{'ratio':>8}")
    ratios = []
    for op, nbytes, t_ours, t_raw in rows:
        ratio = t_ours / t_raw
        ratios.append(ratio)
        print(f"{op:<11}{nbytes:>10}{t_ours * 1e6:>11.1f}{t_raw * 1e6:>11.1f}"
              f"{_busbw(op, nbytes, t_ours):>11.3f}{_busbw(op, nbytes, t_raw):>10.3f}{ratio:>8.3f}")
    inside = sum(0.8 <= r <= 1.25 for r in ratios)
    print(f"ratio (ours/raw latency): min {min(ratios):.3f} max {max(ratios):.3f}; "
          f"{inside}/{len(ratios)} within 0.8..1.25")


if __name__ == "__main__":
    main()
