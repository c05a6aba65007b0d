# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``PyHcclCommunicator``: one HCCL communicator driven through the ctypes binding.

The NPU counterpart of vLLM's ``PyNcclCommunicator`` (``vllm/distributed/device_communicators/
pynccl.py``): collectives are enqueued on the current ACL stream without going through
torch.distributed, so they can be captured into an ACL graph. Rank 0 makes the rendezvous blob
(``HcclGetRootInfo``) and shares it over the group's gloo (CPU) process group.
"""

from __future__ import annotations

import ctypes

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup, ReduceOp

from vllm_ascend_comm.hccl import (
    HCCL_ROOT_INFO_BYTES,
    HCCLLibrary,
    HcclRootInfo,
    hccl_dtype,
    hccl_reduce_op,
)


def _stream_handle(stream=None) -> int:
    """The ``aclrtStream`` of ``stream`` (default: the current NPU stream)."""
    if stream is None:
        from ascend_ops import device

        stream = device.current_stream()
    handle = getattr(stream, "npu_stream", None)
    if handle is None:
        raise TypeError(
            f"stream {stream!r} has no `npu_stream` handle; pass a torch.npu.Stream "
            "(the HCCL path needs a real NPU stream, it cannot run in CPU emulation)"
        )
    return handle


class PyHcclCommunicator:
    """An HCCL communicator over the ranks of ``group`` (a gloo ``ProcessGroup``).

    ``device`` is the ``npu:<i>`` device the buffers live on. ``library`` defaults to
    ``HCCLLibrary()`` (raises ``HcclLibraryError`` if ``libhccl.so`` is missing). Every method
    takes contiguous tensors on ``device``; counts are taken from ``numel()``.
    """

    def __init__(self, group: ProcessGroup, device: torch.device, library: HCCLLibrary | None = None):
        if device.type != "npu":
            raise ValueError(
                f"device {device} is not an NPU; PyHcclCommunicator needs an `npu:<i>` device "
                "(CPU emulation uses gloo through torch.distributed instead)"
            )
        self.group = group
        self.device = device
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.lib = library or HCCLLibrary()
        if self.rank == 0:
            info = self.lib.get_root_info()
        else:
            info = HcclRootInfo()
        blob = torch.frombuffer(bytearray(bytes(info.internal)), dtype=torch.uint8)
        dist.broadcast(blob, src=dist.get_global_rank(group, 0), group=group)
        info = HcclRootInfo()
        ctypes.memmove(ctypes.byref(info), blob.numpy().tobytes(), HCCL_ROOT_INFO_BYTES)
        self.comm: int | None = self.lib.comm_init_root_info(self.world_size, info, self.rank)

    def _check_tensor(self, name: str, t: torch.Tensor) -> None:
        if t.device != self.device:
            raise ValueError(f"{name} is on {t.device}; move it to {self.device}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous; call .contiguous() first")

    def all_reduce(self, input_: torch.Tensor, op=ReduceOp.SUM, stream=None) -> torch.Tensor:
        """Out-of-place all-reduce; returns a new tensor like ``input_``."""
        self._check_tensor("input_", input_)
        out = torch.empty_like(input_)
        self.lib.all_reduce(
            input_.data_ptr(), out.data_ptr(), input_.numel(), hccl_dtype(input_.dtype),
            hccl_reduce_op(op), self.comm, _stream_handle(stream),
        )
        return out

    def all_gather(self, output: torch.Tensor, input_: torch.Tensor, stream=None) -> None:
        """``output`` (``world_size * input_.numel()`` elements) gets every rank's ``input_``."""
        self._check_tensor("input_", input_)
        self._check_tensor("output", output)
        if output.numel() != input_.numel() * self.world_size:
            raise ValueError(
                f"output has {output.numel()} elements; all_gather needs "
                f"world_size * input_.numel() = {self.world_size * input_.numel()}"
            )
        self.lib.all_gather(
            input_.data_ptr(), output.data_ptr(), input_.numel(), hccl_dtype(input_.dtype),
            self.comm, _stream_handle(stream),
        )

    def reduce_scatter(self, output: torch.Tensor, input_: torch.Tensor, op=ReduceOp.SUM, stream=None) -> None:
        """``output`` gets this rank's reduced chunk of ``input_`` (``world_size`` equal chunks)."""
        self._check_tensor("input_", input_)
        self._check_tensor("output", output)
        if input_.numel() != output.numel() * self.world_size:
            raise ValueError(
                f"input_ has {input_.numel()} elements; reduce_scatter needs "
                f"world_size * output.numel() = {self.world_size * output.numel()}"
            )
        self.lib.reduce_scatter(
            input_.data_ptr(), output.data_ptr(), output.numel(), hccl_dtype(input_.dtype),
            hccl_reduce_op(op), self.comm, _stream_handle(stream),
        )

    def broadcast(self, tensor: torch.Tensor, src: int, stream=None) -> None:
        """In place: every rank's ``tensor`` becomes rank ``src``'s (``src`` is a group rank)."""
        self._check_tensor("tensor", tensor)
        self.lib.broadcast(
            tensor.data_ptr(), tensor.numel(), hccl_dtype(tensor.dtype), src, self.comm,
            _stream_handle(stream),
        )

    def send(self, tensor: torch.Tensor, dst: int, stream=None) -> None:
        """Send ``tensor`` to group rank ``dst``."""
        self._check_tensor("tensor", tensor)
        self.lib.send(
            tensor.data_ptr(), tensor.numel(), hccl_dtype(tensor.dtype), dst, self.comm,
            _stream_handle(stream),
        )

    def recv(self, tensor: torch.Tensor, src: int, stream=None) -> None:
        """Receive into ``tensor`` from group rank ``src``."""
        self._check_tensor("tensor", tensor)
        self.lib.recv(
            tensor.data_ptr(), tensor.numel(), hccl_dtype(tensor.dtype), src, self.comm,
            _stream_handle(stream),
        )

    def destroy(self) -> None:
        """Free the HCCL communicator (idempotent)."""
        if self.comm is not None:
            self.lib.comm_destroy(self.comm)
            self.comm = None
