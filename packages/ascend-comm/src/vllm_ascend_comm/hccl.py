# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ctypes binding to HCCL, Huawei's collective communication library (``libhccl.so``).

Only the C entry points the communicator needs are bound. Prototypes and enum values follow
CANN's public headers ``hccl/hccl.h`` and ``hccl/hccl_types.h`` (shipped in the torch-npu wheel
under ``torch_npu/include/third_party/hccl/inc/hccl/``); the package tests parse those headers and
compare them with :data:`FUNCTIONS` and the enums below.

The library is located by ``HCCL_SO_PATH`` (a file path or a soname), default ``libhccl.so``
(found through ``LD_LIBRARY_PATH`` once CANN's ``set_env.sh`` has been sourced). A library that
cannot be loaded raises :class:`HcclLibraryError` naming the path tried and the fix.

Buffers are raw device pointers (``tensor.data_ptr()``), counts are element counts (``uint64``),
streams are ACL stream handles (``aclrtStream``, e.g. ``torch.npu.current_stream().npu_stream``).
"""

from __future__ import annotations

import ctypes
import enum
import os
from dataclasses import dataclass
from typing import Any

import torch

HCCL_SO_PATH_ENV = "HCCL_SO_PATH"
DEFAULT_HCCL_SO = "libhccl.so"

HCCL_ROOT_INFO_BYTES = 4108
"""Size of ``HcclRootInfo.internal`` (``hccl_types.h``: ``HCCL_ROOT_INFO_BYTES``)."""


class HcclResult(enum.IntEnum):
    """Return codes of every HCCL call (``hccl_types.h``: ``HcclResult``)."""

    HCCL_SUCCESS = 0
    HCCL_E_PARA = 1
    HCCL_E_PTR = 2
    HCCL_E_MEMORY = 3
    HCCL_E_INTERNAL = 4
    HCCL_E_NOT_SUPPORT = 5
    HCCL_E_NOT_FOUND = 6
    HCCL_E_UNAVAIL = 7
    HCCL_E_SYSCALL = 8
    HCCL_E_TIMEOUT = 9
    HCCL_E_OPEN_FILE_FAILURE = 10
    HCCL_E_TCP_CONNECT = 11
    HCCL_E_ROCE_CONNECT = 12
    HCCL_E_TCP_TRANSFER = 13
    HCCL_E_ROCE_TRANSFER = 14
    HCCL_E_RUNTIME = 15
    HCCL_E_DRV = 16
    HCCL_E_PROFILING = 17
    HCCL_E_CCE = 18
    HCCL_E_NETWORK = 19
    HCCL_E_AGAIN = 20
    HCCL_E_REMOTE = 21
    HCCL_E_SUSPENDING = 22
    HCCL_E_OPRETRY_FAIL = 23
    HCCL_E_OOM = 24


class HcclReduceOp(enum.IntEnum):
    """Reduction operators (``hccl_types.h``: ``HcclReduceOp``)."""

    HCCL_REDUCE_SUM = 0
    HCCL_REDUCE_PROD = 1
    HCCL_REDUCE_MAX = 2
    HCCL_REDUCE_MIN = 3


class HcclDataType(enum.IntEnum):
    """Element types (``hccl_types.h``: ``HcclDataType``)."""

    HCCL_DATA_TYPE_INT8 = 0
    HCCL_DATA_TYPE_INT16 = 1
    HCCL_DATA_TYPE_INT32 = 2
    HCCL_DATA_TYPE_FP16 = 3
    HCCL_DATA_TYPE_FP32 = 4
    HCCL_DATA_TYPE_INT64 = 5
    HCCL_DATA_TYPE_UINT64 = 6
    HCCL_DATA_TYPE_UINT8 = 7
    HCCL_DATA_TYPE_UINT16 = 8
    HCCL_DATA_TYPE_UINT32 = 9
    HCCL_DATA_TYPE_FP64 = 10
    HCCL_DATA_TYPE_BFP16 = 11


class HcclRootInfo(ctypes.Structure):
    """``HcclRootInfo``: opaque rendezvous blob made by rank 0 and shared with all ranks."""

    _fields_ = [("internal", ctypes.c_byte * HCCL_ROOT_INFO_BYTES)]


hcclComm_t = ctypes.c_void_p  # HcclComm (void *)
aclrtStream_t = ctypes.c_void_p  # aclrtStream (void *)
buffer_type = ctypes.c_void_p  # device buffer (void *)
hcclResult_t = ctypes.c_int  # HcclResult (C enum, int-sized)
hcclDataType_t = ctypes.c_int  # HcclDataType
hcclRedOp_t = ctypes.c_int  # HcclReduceOp

_TORCH_TO_HCCL_DTYPE = {
    torch.int8: HcclDataType.HCCL_DATA_TYPE_INT8,
    torch.int16: HcclDataType.HCCL_DATA_TYPE_INT16,
    torch.int32: HcclDataType.HCCL_DATA_TYPE_INT32,
    torch.float16: HcclDataType.HCCL_DATA_TYPE_FP16,
    torch.float32: HcclDataType.HCCL_DATA_TYPE_FP32,
    torch.int64: HcclDataType.HCCL_DATA_TYPE_INT64,
    torch.uint64: HcclDataType.HCCL_DATA_TYPE_UINT64,
    torch.uint8: HcclDataType.HCCL_DATA_TYPE_UINT8,
    torch.uint16: HcclDataType.HCCL_DATA_TYPE_UINT16,
    torch.uint32: HcclDataType.HCCL_DATA_TYPE_UINT32,
    torch.float64: HcclDataType.HCCL_DATA_TYPE_FP64,
    torch.bfloat16: HcclDataType.HCCL_DATA_TYPE_BFP16,
}

_TORCH_TO_HCCL_OP = {
    torch.distributed.ReduceOp.SUM: HcclReduceOp.HCCL_REDUCE_SUM,
    torch.distributed.ReduceOp.PRODUCT: HcclReduceOp.HCCL_REDUCE_PROD,
    torch.distributed.ReduceOp.MAX: HcclReduceOp.HCCL_REDUCE_MAX,
    torch.distributed.ReduceOp.MIN: HcclReduceOp.HCCL_REDUCE_MIN,
}


def hccl_dtype(dtype: torch.dtype) -> HcclDataType:
    """The ``HcclDataType`` for a torch dtype; TypeError naming ``dtype`` if HCCL has none."""
    try:
        return _TORCH_TO_HCCL_DTYPE[dtype]
    except KeyError:
        supported = ", ".join(str(d) for d in _TORCH_TO_HCCL_DTYPE)
        raise TypeError(
            f"dtype {dtype} has no HCCL data type; cast the tensor to one of: {supported}"
        ) from None


def hccl_reduce_op(op: Any) -> HcclReduceOp:
    """The ``HcclReduceOp`` for a ``torch.distributed.ReduceOp``; ValueError naming ``op`` otherwise."""
    try:
        return _TORCH_TO_HCCL_OP[op]
    except (KeyError, TypeError):
        raise ValueError(
            f"op {op!r} is not an HCCL reduction; use ReduceOp.SUM, PRODUCT, MAX or MIN"
        ) from None


@dataclass(frozen=True)
class Function:
    """One C entry point: name, ctypes return type, ctypes argument types (in order)."""

    name: str
    restype: Any
    argtypes: tuple


FUNCTIONS: tuple[Function, ...] = (
    # const char *HcclGetErrorString(HcclResult code);
    Function("HcclGetErrorString", ctypes.c_char_p, (hcclResult_t,)),
    # HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
    Function("HcclGetRootInfo", hcclResult_t, (ctypes.POINTER(HcclRootInfo),)),
    # HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo,
    #                                 uint32_t rank, HcclComm *comm);
    Function(
        "HcclCommInitRootInfo",
        hcclResult_t,
        (ctypes.c_uint32, ctypes.POINTER(HcclRootInfo), ctypes.c_uint32, ctypes.POINTER(hcclComm_t)),
    ),
    # HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType,
    #                          HcclReduceOp op, HcclComm comm, aclrtStream stream);
    Function(
        "HcclAllReduce",
        hcclResult_t,
        (buffer_type, buffer_type, ctypes.c_uint64, hcclDataType_t, hcclRedOp_t, hcclComm_t, aclrtStream_t),
    ),
    # HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root,
    #                          HcclComm comm, aclrtStream stream);
    Function(
        "HcclBroadcast",
        hcclResult_t,
        (buffer_type, ctypes.c_uint64, hcclDataType_t, ctypes.c_uint32, hcclComm_t, aclrtStream_t),
    ),
    # HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount,
    #                              HcclDataType dataType, HcclReduceOp op, HcclComm comm,
    #                              aclrtStream stream);
    Function(
        "HcclReduceScatter",
        hcclResult_t,
        (buffer_type, buffer_type, ctypes.c_uint64, hcclDataType_t, hcclRedOp_t, hcclComm_t, aclrtStream_t),
    ),
    # HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount,
    #                          HcclDataType dataType, HcclComm comm, aclrtStream stream);
    Function(
        "HcclAllGather",
        hcclResult_t,
        (buffer_type, buffer_type, ctypes.c_uint64, hcclDataType_t, hcclComm_t, aclrtStream_t),
    ),
    # HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank,
    #                     HcclComm comm, aclrtStream stream);
    Function(
        "HcclSend",
        hcclResult_t,
        (buffer_type, ctypes.c_uint64, hcclDataType_t, ctypes.c_uint32, hcclComm_t, aclrtStream_t),
    ),
    # HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank,
    #                     HcclComm comm, aclrtStream stream);
    Function(
        "HcclRecv",
        hcclResult_t,
        (buffer_type, ctypes.c_uint64, hcclDataType_t, ctypes.c_uint32, hcclComm_t, aclrtStream_t),
    ),
    # HcclResult HcclCommDestroy(HcclComm comm);
    Function("HcclCommDestroy", hcclResult_t, (hcclComm_t,)),
)


class HcclLibraryError(RuntimeError):
    """``libhccl.so`` could not be loaded or lacks a symbol this binding needs."""


class HcclError(RuntimeError):
    """An HCCL call returned a code other than ``HCCL_SUCCESS``; ``.code`` holds it."""

    def __init__(self, func: str, code: int, text: str):
        self.func = func
        self.code = code
        super().__init__(f"{func} failed with HCCL error {code} ({text})")


def library_path() -> str:
    """The library to load: ``$HCCL_SO_PATH`` when set and non-empty, else ``libhccl.so``."""
    return os.environ.get(HCCL_SO_PATH_ENV) or DEFAULT_HCCL_SO


class HCCLLibrary:
    """The loaded ``libhccl.so`` with :data:`FUNCTIONS` bound; methods raise :class:`HcclError`.

    ``so_file`` overrides :func:`library_path`. Raises :class:`HcclLibraryError` when the file
    cannot be loaded (message names the path and how to fix it) or a symbol is missing.
    """

    def __init__(self, so_file: str | None = None):
        self.path = so_file or library_path()
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise HcclLibraryError(
                f"cannot load the HCCL library {self.path!r} ({exc}). HCCL ships with CANN: "
                "source CANN's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) so "
                f"libhccl.so is on LD_LIBRARY_PATH, or set {HCCL_SO_PATH_ENV} to the full path "
                "of libhccl.so. In CPU emulation (VLLM_ASCEND_EMULATE=1) HCCL is not used."
            ) from exc
        self._funcs: dict[str, Any] = {}
        for spec in FUNCTIONS:
            try:
                fn = getattr(self._lib, spec.name)
            except AttributeError as exc:
                raise HcclLibraryError(
                    f"{self.path!r} has no symbol {spec.name}; it is not a CANN libhccl.so this "
                    f"binding supports; point {HCCL_SO_PATH_ENV} at CANN's libhccl.so"
                ) from exc
            fn.restype = spec.restype
            fn.argtypes = list(spec.argtypes)
            self._funcs[spec.name] = fn

    def _check(self, name: str, code: int) -> None:
        if code != HcclResult.HCCL_SUCCESS:
            raise HcclError(name, code, self.error_string(code))

    def error_string(self, code: int) -> str:
        """HCCL's text for a result code (``HcclGetErrorString``)."""
        raw = self._funcs["HcclGetErrorString"](code)
        return raw.decode(errors="replace") if raw else "unknown error"

    def get_root_info(self) -> HcclRootInfo:
        """Make the rendezvous blob on the root rank (``HcclGetRootInfo``)."""
        info = HcclRootInfo()
        self._check("HcclGetRootInfo", self._funcs["HcclGetRootInfo"](ctypes.byref(info)))
        return info

    def comm_init_root_info(self, n_ranks: int, root_info: HcclRootInfo, rank: int) -> int:
        """Join a communicator of ``n_ranks`` as ``rank``; return the ``HcclComm`` handle."""
        comm = hcclComm_t()
        self._check(
            "HcclCommInitRootInfo",
            self._funcs["HcclCommInitRootInfo"](n_ranks, ctypes.byref(root_info), rank, ctypes.byref(comm)),
        )
        if comm.value is None:  # a NULL handle with a success code: never valid
            raise RuntimeError("HcclCommInitRootInfo returned success but a NULL communicator")
        return comm.value

    def all_reduce(self, send, recv, count, dtype, op, comm, stream) -> None:
        """``HcclAllReduce``: ``recv[i] = op over ranks of send[i]`` for ``count`` elements."""
        self._check("HcclAllReduce", self._funcs["HcclAllReduce"](send, recv, count, dtype, op, comm, stream))

    def broadcast(self, buf, count, dtype, root, comm, stream) -> None:
        """``HcclBroadcast``: copy ``count`` elements of ``buf`` from rank ``root`` to all."""
        self._check("HcclBroadcast", self._funcs["HcclBroadcast"](buf, count, dtype, root, comm, stream))

    def reduce_scatter(self, send, recv, recv_count, dtype, op, comm, stream) -> None:
        """``HcclReduceScatter``: rank r receives the reduced chunk r of ``recv_count`` elements."""
        self._check(
            "HcclReduceScatter",
            self._funcs["HcclReduceScatter"](send, recv, recv_count, dtype, op, comm, stream),
        )

    def all_gather(self, send, recv, send_count, dtype, comm, stream) -> None:
        """``HcclAllGather``: ``recv`` is the rank-ordered concatenation of every ``send``."""
        self._check("HcclAllGather", self._funcs["HcclAllGather"](send, recv, send_count, dtype, comm, stream))

    def send(self, buf, count, dtype, dst, comm, stream) -> None:
        """``HcclSend`` of ``count`` elements to rank ``dst`` (rank within ``comm``)."""
        self._check("HcclSend", self._funcs["HcclSend"](buf, count, dtype, dst, comm, stream))

    def recv(self, buf, count, dtype, src, comm, stream) -> None:
        """``HcclRecv`` of ``count`` elements from rank ``src`` (rank within ``comm``)."""
        self._check("HcclRecv", self._funcs["HcclRecv"](buf, count, dtype, src, comm, stream))

    def comm_destroy(self, comm) -> None:
        """``HcclCommDestroy``: free the communicator's resources."""
        self._check("HcclCommDestroy", self._funcs["HcclCommDestroy"](comm))
