# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPUCommunicator in CPU emulation: 2 spawned processes, gloo over a TCP store on 127.0.0.1.

Each case's expected value is plain torch math on the per-rank inputs (see ``_comm_worker``).
One spawn runs every case (process start is the slow part on 2 cores).
"""

from __future__ import annotations

import socket

import _comm_worker
import pytest
import torch.multiprocessing as mp

CASES = [
    "_device_is_plain_cpu",
    "all_reduce",
    "all_reduce_int",
    "all_gather_dims",
    "reduce_scatter_dims",
    "reduce_scatter_bad_dim",
    "gather",
    "broadcast",
    "send_recv",
    "batch_isend_irecv",
    "all_gatherv",
    "reduce_scatterv",
    "dispatch_combine_without_manager",
    "collective_timeout_names_group_and_op",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def results():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_comm_worker.run, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    out = {}
    try:
        for _ in procs:
            rank, res = queue.get(timeout=120)
            out[rank] = res
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    for rank, res in out.items():
        assert "_setup" not in res, f"rank {rank} setup failed:\n{res['_setup']}"
    return out


@pytest.mark.parametrize("case", CASES)
def test_collective(results, case):
    for rank in (0, 1):
        assert case in results[rank], f"rank {rank} did not run {case}"
        assert results[rank][case] is None, f"rank {rank} {case}:\n{results[rank][case]}"
