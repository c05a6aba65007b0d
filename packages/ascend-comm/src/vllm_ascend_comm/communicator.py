# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``NPUCommunicator``: vLLM's device communicator for Ascend, over HCCL or (emulation) gloo.

vLLM builds one per parallel group (``GroupCoordinator`` in ``vllm/distributed/parallel_state.py``)
from ``NPUPlatform.get_device_communicator_cls()``. The interface and the semantics of every
method are those of ``DeviceCommunicatorBase``
(``vllm/distributed/device_communicators/base_device_communicator.py``).

Two paths, chosen by the group's device type:

- NPU (``npu:<i>``): eager collectives through torch.distributed on the group's ``hccl`` device
  group (torch_npu's ``ProcessGroupHCCL``); while an ACL graph is being captured, all_reduce,
  all_gather, reduce_scatter, broadcast and send/recv go through :class:`PyHcclCommunicator`
  (the ctypes HCCL binding), which enqueues on the capturing stream.
- CPU emulation (``cpu``, ``VLLM_ASCEND_EMULATE=1``): torch.distributed on the group's gloo
  device group (vLLM creates it with the platform's ``dist_backend``, ``gloo``).

Any collective failure (timeout, dead peer) is re-raised as :class:`CollectiveError` naming the
group and the operation. Expert-parallel ``dispatch``/``combine`` use vLLM's all-gather /
reduce-scatter all2all manager (``AgRsAll2AllManager``), built on ``all_gatherv`` /
``reduce_scatterv`` below.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup
from vllm.distributed.device_communicators.base_device_communicator import (
    DeviceCommunicatorBase,
)

if TYPE_CHECKING:
    from vllm_ascend_comm.pyhccl import PyHcclCommunicator

SUPPORTED_ALL2ALL_BACKENDS = ("allgather_reducescatter", "naive")
"""``parallel_config.all2all_backend`` values served (both by the all-gather/reduce-scatter manager)."""


class CollectiveError(RuntimeError):
    """A collective failed; the message names the group (``unique_name``, ranks) and the op."""


PEER_LOST_MARKERS = ("Connection reset by peer", "Connection closed by peer", "Broken pipe")
"""Substrings of the transport errors that mean a peer process is gone (gloo's TCP transport)."""

PEER_LOST_GRACE_S = 3.0
"""Seconds a rank that lost a peer waits before raising :class:`CollectiveError`.

A collective with a dead peer fails on the survivors at once, while the process that owns the
workers (vLLM's ``MultiprocExecutor``: its ``MultiprocWorkerMonitor`` thread watches every
worker's process sentinel) needs a moment to notice the death. Without the wait, the survivor's
"connection reset" reply can reach the executor first and fail the engine with a symptom instead
of the cause ("Worker proc VllmWorker-<rank> died unexpectedly"). The wait only delays an error
that nothing can recover from; the executor's shutdown ends the waiting rank sooner.
"""


def peer_lost(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) says a peer process is gone."""
    seen: BaseException | None = exc
    while seen is not None:
        if any(marker in str(seen) for marker in PEER_LOST_MARKERS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_capturing(device: torch.device) -> bool:
    """True while the current NPU stream is capturing an ACL graph (always False on CPU)."""
    if device.type != "npu":
        return False
    from ascend_ops import device as npu_device

    return npu_device.is_capturing()


class NPUCommunicator(DeviceCommunicatorBase):
    device: torch.device  # set by DeviceCommunicatorBase.__init__
    """Device communicator for one vLLM parallel group on Ascend (HCCL) or in emulation (gloo).

    Arguments are vLLM's: ``cpu_group`` (gloo ``ProcessGroup``), ``device`` (``npu:<i>`` or
    ``cpu[:<i>]``), ``device_group`` (hccl or gloo ``ProcessGroup``; required), ``unique_name``
    (e.g. ``"tp:0"``), ``use_all2all`` (EP groups). Raises ValueError when ``device_group`` is
    missing or the all2all backend is not one of :data:`SUPPORTED_ALL2ALL_BACKENDS`, and
    ``HcclLibraryError`` on NPU when ``libhccl.so`` cannot be loaded.
    """

    def __init__(
        self,
        cpu_group: ProcessGroup,
        device: torch.device | None = None,
        device_group: ProcessGroup | None = None,
        unique_name: str = "",
        use_all2all: bool = False,
        global_ranks: list[int] | None = None,
        global_world_size: int | None = None,
    ):
        super().__init__(
            cpu_group,
            device,
            device_group,
            unique_name,
            global_ranks=global_ranks,
            global_world_size=global_world_size,
            use_all2all=use_all2all,
        )
        if device_group is None:
            raise ValueError(
                f"device_group is None for group {unique_name!r}; NPUCommunicator needs the "
                "group's device process group (hccl on NPU, gloo in emulation)"
            )
        self.emulated = self.device.type == "cpu"
        if self.emulated:
            # vLLM names the out-of-tree device "cpu:<local_rank>"; CPU memory has one device.
            self.device = torch.device("cpu")
        self.pyhccl: PyHcclCommunicator | None = None
        if not self.emulated and self.world_size > 1:
            from vllm_ascend_comm.pyhccl import PyHcclCommunicator

            self.pyhccl = PyHcclCommunicator(cpu_group, self.device)
        if self.use_all2all:
            if self.all2all_backend not in SUPPORTED_ALL2ALL_BACKENDS:
                raise ValueError(
                    f"all2all_backend={self.all2all_backend!r} is not available on Ascend; set "
                    f"--all2all-backend to one of {SUPPORTED_ALL2ALL_BACKENDS}"
                )
            from vllm.distributed.device_communicators.all2all import AgRsAll2AllManager

            self.all2all_manager = AgRsAll2AllManager(self.cpu_group)

    # -- helpers ---------------------------------------------------------------------------

    def _fail(self, op: str, exc: BaseException) -> CollectiveError:
        """The error to raise for a failed ``op``; waits :data:`PEER_LOST_GRACE_S` first when
        the failure is a lost peer, so the worker owner's death report comes first."""
        if peer_lost(exc):
            time.sleep(PEER_LOST_GRACE_S)
        return CollectiveError(
            f"{op} failed on group {self.unique_name!r} (ranks {self.ranks}, this rank "
            f"{self.rank_in_group} of {self.world_size}): {exc}"
        )

    def _use_pyhccl(self) -> bool:
        return self._pyhccl_if_capturing() is not None

    def _pyhccl_if_capturing(self) -> PyHcclCommunicator | None:
        """The ctypes HCCL communicator while a stream of our device is capturing, else None."""
        return self.pyhccl if self.pyhccl is not None and _is_capturing(self.device) else None

    # -- collectives -----------------------------------------------------------------------

    def all_reduce(self, input_: torch.Tensor) -> torch.Tensor:
        """Sum ``input_`` over the group; returns the sum as a new tensor (same shape/dtype).

        Out of place, ``input_`` untouched: vLLM calls this from its ``torch.ops.vllm.all_reduce``
        custom op (the platform opts into collective custom ops so compiled graphs keep the
        collective opaque), and a custom op must neither mutate nor return its input
        (``GroupCoordinator.all_reduce``, vLLM 0.32).
        """
        try:
            if (pyhccl := self._pyhccl_if_capturing()) is not None:
                return pyhccl.all_reduce(input_)
            out = input_.clone()
            dist.all_reduce(out, group=self.device_group)
            return out
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("all_reduce", exc) from exc

    def all_gather(self, input_: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """Concatenate every rank's ``input_`` along ``dim`` in rank order."""
        if not -input_.dim() <= dim < input_.dim():
            raise ValueError(f"dim={dim} is out of range for a tensor of shape {tuple(input_.shape)}")
        if dim < 0:
            dim += input_.dim()
        try:
            if (pyhccl := self._pyhccl_if_capturing()) is not None:
                src = input_.contiguous()
                flat = torch.empty((self.world_size,) + tuple(src.shape), dtype=src.dtype, device=src.device)
                pyhccl.all_gather(flat, src)
                return torch.cat(flat.unbind(0), dim=dim)
            if dim == 0:
                # rank-major concat along dim 0 is the all_gather_into_tensor layout itself:
                # no reshape/movedim views on the hot path (TP logits and MoE gathers)
                out = torch.empty((input_.shape[0] * self.world_size,) + tuple(input_.shape[1:]),
                                  dtype=input_.dtype, device=input_.device)
                dist.all_gather_into_tensor(out, input_.contiguous(), group=self.device_group)
                return out
            return super().all_gather(input_, dim)
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("all_gather", exc) from exc

    def reduce_scatter(self, input_: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """Sum over the group, then keep this rank's chunk of ``dim`` (size divisible by world size)."""
        if self.world_size == 1:
            return input_
        if not -input_.dim() <= dim < input_.dim():
            raise ValueError(f"dim={dim} is out of range for a tensor of shape {tuple(input_.shape)}")
        if input_.shape[dim] % self.world_size:
            raise ValueError(
                f"input_.shape[{dim}]={input_.shape[dim]} is not divisible by the group size "
                f"{self.world_size}; pad it or use reduce_scatterv with sizes"
            )
        if dim < 0:
            dim += input_.dim()
        try:
            if (pyhccl := self._pyhccl_if_capturing()) is not None:
                src = input_.movedim(dim, 0).contiguous()
                out = torch.empty((src.shape[0] // self.world_size,) + tuple(src.shape[1:]),
                                  dtype=src.dtype, device=src.device)
                pyhccl.reduce_scatter(out, src)
                return out.movedim(0, dim).contiguous()
            src = input_.movedim(dim, 0).contiguous()
            out = torch.empty((src.shape[0] // self.world_size,) + tuple(src.shape[1:]),
                              dtype=src.dtype, device=src.device)
            dist.reduce_scatter_tensor(out, src, group=self.device_group)
            return out.movedim(0, dim).contiguous()
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("reduce_scatter", exc) from exc

    def all_gatherv(
        self,
        input_: torch.Tensor | list[torch.Tensor],
        dim: int = 0,
        sizes: list[int] | None = None,
    ) -> torch.Tensor | list[torch.Tensor]:
        """All-gather along dim 0 where rank r contributes ``sizes[r]`` rows (a list: each tensor).

        ``sizes=None`` means every rank has the same row count. Only ``dim=0`` (as in vLLM's
        CUDA communicator); ValueError otherwise or when ``sizes`` disagrees with ``input_``.
        """
        if dim != 0:
            raise ValueError(f"dim={dim}: all_gatherv supports only dim=0")
        if isinstance(input_, (list, tuple)):
            return [self._all_gatherv_one(t, sizes) for t in input_]
        return self._all_gatherv_one(input_, sizes)

    def _all_gatherv_one(self, input_: torch.Tensor, sizes: list[int] | None) -> torch.Tensor:
        if sizes is None or all(s == sizes[0] for s in sizes):
            if sizes is not None and input_.shape[0] != sizes[self.rank_in_group]:
                raise ValueError(f"input_ has {input_.shape[0]} rows but "
                                 f"sizes[{self.rank_in_group}]={sizes[self.rank_in_group]}")
            return self.all_gather(input_, 0)
        if len(sizes) != self.world_size or input_.shape[0] != sizes[self.rank_in_group]:
            raise ValueError(
                f"sizes={sizes} must have one entry per rank ({self.world_size}) and "
                f"sizes[{self.rank_in_group}] must equal input_.shape[0]={input_.shape[0]}"
            )
        pad = max(sizes)
        padded = input_.new_zeros((pad,) + tuple(input_.shape[1:]))
        padded[: input_.shape[0]] = input_
        gathered = self.all_gather(padded, 0)
        return torch.cat([gathered[r * pad: r * pad + s] for r, s in enumerate(sizes)], 0)

    def reduce_scatterv(
        self, input_: torch.Tensor, dim: int = -1, sizes: list[int] | None = None
    ) -> torch.Tensor:
        """Sum over the group, then keep rows ``sizes[:r]`` .. ``sizes[:r+1]`` of ``dim`` on rank r.

        ``sizes=None``: equal chunks (plain reduce_scatter). ValueError when ``sizes`` does not
        have one entry per rank or does not add up to ``input_.shape[dim]``.
        """
        if sizes is None or all(s == sizes[0] for s in sizes):
            return self.reduce_scatter(input_, dim)
        if dim < 0:
            dim += input_.dim()
        if len(sizes) != self.world_size or sum(sizes) != input_.shape[dim]:
            raise ValueError(
                f"sizes={sizes} must have {self.world_size} entries summing to "
                f"input_.shape[{dim}]={input_.shape[dim]}"
            )
        total = self.all_reduce(input_.clone())
        start = sum(sizes[: self.rank_in_group])
        return total.narrow(dim, start, sizes[self.rank_in_group]).contiguous()

    def gather(self, input_: torch.Tensor, dst: int = 0, dim: int = -1) -> torch.Tensor | None:
        """Concatenate every rank's ``input_`` along ``dim`` on group rank ``dst``; None elsewhere."""
        try:
            return super().gather(input_, dst, dim)
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("gather", exc) from exc

    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        """In place: ``tensor`` becomes group rank ``src``'s on every rank; returns it."""
        if self.world_size == 1:
            return tensor
        try:
            if (pyhccl := self._pyhccl_if_capturing()) is not None:
                pyhccl.broadcast(tensor, src)
                return tensor
            dist.broadcast(tensor, self.ranks[src], self.device_group)
            return tensor
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("broadcast", exc) from exc

    def send(self, tensor: torch.Tensor, dst: int | None = None) -> None:
        """Blocking send to group rank ``dst`` (default: the next rank)."""
        if dst is None:
            dst = (self.rank_in_group + 1) % self.world_size
        try:
            if (pyhccl := self._pyhccl_if_capturing()) is not None:
                pyhccl.send(tensor.contiguous(), dst)
                return
            dist.send(tensor, self.ranks[dst], self.device_group)
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("send", exc) from exc

    def recv(self, size: torch.Size, dtype: torch.dtype, src: int | None = None) -> torch.Tensor:
        """Blocking receive of a ``size``/``dtype`` tensor from group rank ``src`` (default: previous)."""
        if src is None:
            src = (self.rank_in_group - 1) % self.world_size
        tensor = torch.empty(size, dtype=dtype, device=self.device)
        try:
            if (pyhccl := self._pyhccl_if_capturing()) is not None:
                pyhccl.recv(tensor, src)
                return tensor
            dist.recv(tensor, self.ranks[src], self.device_group)
            return tensor
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("recv", exc) from exc

    def batch_isend_irecv(self, p2p_ops: list) -> None:
        """Run a list of ``torch.distributed.P2POp`` together and wait for all of them."""
        try:
            for work in dist.batch_isend_irecv(p2p_ops):
                work.wait()
        except (RuntimeError, dist.DistError) as exc:
            raise self._fail("batch_isend_irecv", exc) from exc

    # -- expert parallel -------------------------------------------------------------------

    def dispatch_router_logits(self, hidden_states, router_logits, is_sequence_parallel=False, extra_tensors=None):
        """Gather tokens and router logits from the EP ranks (no-op without an all2all manager)."""
        if self.all2all_manager is None:
            return super().dispatch_router_logits(hidden_states, router_logits, is_sequence_parallel, extra_tensors)
        return self.all2all_manager.dispatch_router_logits(
            hidden_states, router_logits, is_sequence_parallel, extra_tensors
        )

    def dispatch(self, hidden_states, topk_weights, topk_ids, is_sequence_parallel=False, extra_tensors=None):
        """Gather tokens and their top-k routing from the EP ranks (no-op without a manager)."""
        if self.all2all_manager is None:
            return super().dispatch(hidden_states, topk_weights, topk_ids, is_sequence_parallel, extra_tensors)
        return self.all2all_manager.dispatch(
            hidden_states, topk_weights, topk_ids, is_sequence_parallel, extra_tensors=extra_tensors
        )

    def combine(self, hidden_states: torch.Tensor, is_sequence_parallel: bool = False) -> torch.Tensor:
        """Sum expert outputs over the EP ranks and return this rank's tokens (no-op without a manager)."""
        if self.all2all_manager is None:
            return super().combine(hidden_states, is_sequence_parallel)
        return self.all2all_manager.combine(hidden_states, is_sequence_parallel)

    def destroy(self) -> None:
        """Release the HCCL communicator and the all2all manager."""
        if self.pyhccl is not None:
            self.pyhccl.destroy()
            self.pyhccl = None
        if self.all2all_manager is not None:
            self.all2all_manager.destroy()
            self.all2all_manager = None
