# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Worker run in each of 2 spawned processes: exercises NPUCommunicator over gloo (emulation).

Every check compares the communicator's result with the expected math computed here with plain
torch from the per-rank inputs, which every rank can rebuild (``_inp(rank)``). Results go back
to the test as ``{case: None | "failure text"}`` per rank.
"""

from __future__ import annotations

import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

WORLD = 2


def _inp(rank: int, shape=(4, 6), dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(1234 + rank)
    return torch.randn(shape, generator=g).to(dtype)


def _check(results: dict, name: str, fn) -> None:
    try:
        fn()
        results[name] = None
    except Exception:  # reported to the test process, which fails the case
        results[name] = traceback.format_exc()


def _cases(comm, rank: int) -> dict:
    res: dict = {}
    others = [_inp(r) for r in range(WORLD)]

    def all_reduce():
        x = _inp(rank).clone()
        out = comm.all_reduce(x)
        torch.testing.assert_close(out, others[0] + others[1])
        # out of place (vLLM's all_reduce custom op contract): input untouched, new storage
        torch.testing.assert_close(x, others[rank])
        assert out.data_ptr() != x.data_ptr()

    def all_reduce_int():
        x = torch.arange(10, dtype=torch.int64) * (rank + 1)
        out = comm.all_reduce(x)
        assert torch.equal(out, torch.arange(10, dtype=torch.int64) * 3), out

    def all_gather_dims():
        for dim in (0, 1, -1):
            out = comm.all_gather(_inp(rank), dim=dim)
            torch.testing.assert_close(out, torch.cat(others, dim=dim))

    def reduce_scatter_dims():
        total = others[0] + others[1]
        for dim in (0, 1, -1):
            out = comm.reduce_scatter(_inp(rank), dim=dim)
            torch.testing.assert_close(out, total.chunk(WORLD, dim=dim)[rank])

    def reduce_scatter_bad_dim():
        try:
            comm.reduce_scatter(torch.zeros(3, 5), dim=0)
        except ValueError as exc:
            assert "not divisible" in str(exc)
        else:
            raise AssertionError("no ValueError for a dim not divisible by the group size")

    def gather():
        out = comm.gather(_inp(rank), dst=1, dim=1)
        if rank == 1:
            torch.testing.assert_close(out, torch.cat(others, dim=1))
        else:
            assert out is None

    def broadcast():
        t = _inp(rank).clone()
        out = comm.broadcast(t, src=1)
        torch.testing.assert_close(out, others[1])
        torch.testing.assert_close(t, others[1])  # in place

    def send_recv():
        if rank == 0:
            comm.send(_inp(0), dst=1)
            back = comm.recv(torch.Size((4, 6)), torch.float32, src=1)
            torch.testing.assert_close(back, others[1] * 2)
        else:
            got = comm.recv(torch.Size((4, 6)), torch.float32)  # default src: previous rank
            torch.testing.assert_close(got, others[0])
            comm.send(_inp(1) * 2)  # default dst: next rank

    def batch_isend_irecv():
        peer = 1 - rank
        buf = torch.empty(4, 6)
        ops = [
            dist.P2POp(dist.isend, _inp(rank), comm.ranks[peer], comm.device_group),
            dist.P2POp(dist.irecv, buf, comm.ranks[peer], comm.device_group),
        ]
        comm.batch_isend_irecv(ops)
        torch.testing.assert_close(buf, others[peer])

    sizes = [3, 5]
    rows = [_inp(r, shape=(sizes[r], 2)) for r in range(WORLD)]

    def all_gatherv():
        out = comm.all_gatherv(rows[rank], dim=0, sizes=sizes)
        torch.testing.assert_close(out, torch.cat(rows, 0))
        outs = comm.all_gatherv([rows[rank], rows[rank][:, :1] * 3], dim=0, sizes=sizes)
        torch.testing.assert_close(outs[1], torch.cat(rows, 0)[:, :1] * 3)

    def reduce_scatterv():
        full = [_inp(r, shape=(8, 3)) for r in range(WORLD)]
        total = full[0] + full[1]
        out = comm.reduce_scatterv(full[rank], dim=0, sizes=sizes)
        torch.testing.assert_close(out, total[:3] if rank == 0 else total[3:])
        even = comm.reduce_scatterv(full[rank], dim=0, sizes=None)
        torch.testing.assert_close(even, total.chunk(2, 0)[rank])

    def dispatch_combine_without_manager():
        h, w, ids = _inp(rank), torch.rand(4, 2), torch.zeros(4, 2, dtype=torch.int64)
        got = comm.dispatch(h, w, ids)
        assert got[0] is h and got[1] is w and got[2] is ids
        assert comm.combine(h) is h

    for fn in (
        all_reduce, all_reduce_int, all_gather_dims, reduce_scatter_dims, reduce_scatter_bad_dim,
        gather, broadcast, send_recv, batch_isend_irecv, all_gatherv, reduce_scatterv,
        dispatch_combine_without_manager,
    ):
        _check(res, fn.__name__, fn)
    return res


def _timeout_case(rank: int) -> dict:
    """Rank 1 calls all_reduce alone on a group with a 2 s timeout: it must get CollectiveError."""
    from vllm_ascend_comm.communicator import CollectiveError, NPUCommunicator

    res: dict = {}
    grp = dist.new_group([0, 1], backend="gloo", timeout=timedelta(seconds=2))
    comm = NPUCommunicator(grp, torch.device(f"cpu:{rank}"), grp, unique_name="tp:timeout")

    def collective_timeout_names_group_and_op():
        if rank == 1:
            try:
                comm.all_reduce(torch.ones(3))
            except CollectiveError as exc:
                msg = str(exc)
                assert "all_reduce" in msg and "tp:timeout" in msg, msg
            else:
                raise AssertionError("all_reduce with an absent peer did not fail")

    _check(res, "collective_timeout_names_group_and_op", collective_timeout_names_group_and_op)
    return res


def run(rank: int, port: int, queue) -> None:
    try:
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
            timeout=timedelta(seconds=60),
        )
        from vllm_ascend_comm.communicator import NPUCommunicator

        device_group = dist.new_group([0, 1], backend="gloo")
        cpu_group = dist.new_group([0, 1], backend="gloo")
        comm = NPUCommunicator(cpu_group, torch.device(f"cpu:{rank}"), device_group, unique_name="tp:0")
        res = {"_device_is_plain_cpu": None if comm.device == torch.device("cpu") else str(comm.device)}
        res.update(_cases(comm, rank))
        dist.barrier()
        res.update(_timeout_case(rank))
        queue.put((rank, res))
    except Exception:
        queue.put((rank, {"_setup": traceback.format_exc()}))
