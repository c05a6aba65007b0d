# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The ctypes HCCL binding checked against CANN's published headers, without libhccl.so.

Source of truth: ``hccl.h`` and ``hccl_types.h`` from the torch-npu 2.13.0 wheel
(``torch_npu/include/third_party/hccl/inc/hccl/``), read from the downloaded wheel in the cache
``ascend_ops.simulator.schemas`` uses (``$ASCEND_OPS_TORCH_NPU_CACHE``, default
``~/.cache/vllm-ascend/torch_npu``; ``scripts/bootstrap.sh`` fetches it). Never installed. Without
the wheel these tests fail under CI (``CI=true``) and skip elsewhere, naming the fetch command.
"""

from __future__ import annotations

import ctypes
import os
import re
import zipfile

import pytest
import torch
from ascend_ops.simulator import SimulatedNpuError
from ascend_ops.simulator import schemas as npu_wheel
from vllm_ascend_comm import hccl

HEADER_DIR = npu_wheel.HCCL_HEADER_DIR


def _wheel() -> str:
    """Path of the cached torch-npu wheel; fails the test under CI, skips it elsewhere."""
    try:
        return str(npu_wheel.wheel_path())
    except SimulatedNpuError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI needs the torch-npu wheel: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def headers() -> dict[str, str]:
    whl = _wheel()
    with zipfile.ZipFile(whl) as zf:
        return {
            name: zf.read(HEADER_DIR + name).decode()
            for name in ("hccl.h", "hccl_types.h")
        }


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def _parse_enums(src: str) -> dict[str, dict[str, int]]:
    """``typedef enum { A = 0, B, ... } Name;`` -> {Name: {A: 0, B: 1, ...}} (implicit values counted)."""
    enums = {}
    for body, name in re.findall(r"typedef\s+enum\s*\{(.*?)\}\s*(\w+)\s*;", _strip_comments(src), flags=re.S):
        values, nxt = {}, 0
        for item in body.split(","):
            item = re.sub(r"#\w+[^\n]*", "", item).strip()
            if not item:
                continue
            if "=" in item:
                key, val = (x.strip() for x in item.split("=", 1))
                nxt = int(val, 0)
            else:
                key = item
            values[key] = nxt
            nxt += 1
        enums[name] = values
    return enums


def _norm(c_type: str) -> str:
    """Canonical spelling of a C type: single spaces, ``*`` written as `` *``."""
    return " ".join(c_type.replace("*", " * ").split()).replace("* *", "**")


def _parse_prototypes(src: str) -> dict[str, tuple[str, list[str]]]:
    """``extern R Name(T1 a, T2 b);`` -> {Name: ("R", ["T1", "T2"])} with parameter names dropped."""
    protos = {}
    pattern = r"extern\s+([\w\s]+?\s*\**)\s*\b(\w+)\s*\(([^)]*)\)\s*;"
    for ret, name, args in re.findall(pattern, _strip_comments(src)):
        types = []
        for arg in args.split(","):
            toks = _norm(arg).split(" ")
            if toks == [""] or toks == ["void"]:
                continue
            types.append(" ".join(toks[:-1]))  # drop the parameter name
        protos[name] = (_norm(ret), types)
    return protos


# C type (as written in hccl.h) -> the ctypes type a correct binding must use.
C_TO_CTYPES = {
    "HcclResult": ctypes.c_int,
    "HcclDataType": ctypes.c_int,
    "HcclReduceOp": ctypes.c_int,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "void *": ctypes.c_void_p,
    "HcclComm": ctypes.c_void_p,
    "aclrtStream": ctypes.c_void_p,
    "HcclComm *": ctypes.POINTER(ctypes.c_void_p),
    "HcclRootInfo *": ctypes.POINTER(hccl.HcclRootInfo),
    "const HcclRootInfo *": ctypes.POINTER(hccl.HcclRootInfo),
    "const char *": ctypes.c_char_p,
}

REQUIRED = {
    "HcclGetRootInfo", "HcclCommInitRootInfo", "HcclAllReduce", "HcclBroadcast", "HcclAllGather",
    "HcclReduceScatter", "HcclSend", "HcclRecv", "HcclCommDestroy",
}


def test_binding_covers_the_required_entry_points():
    assert REQUIRED <= {f.name for f in hccl.FUNCTIONS}


@pytest.mark.parametrize("spec", hccl.FUNCTIONS, ids=lambda f: f.name)
def test_prototype_matches_header(headers, spec):
    protos = _parse_prototypes(headers["hccl.h"])
    assert spec.name in protos, f"{spec.name} is not declared in hccl.h"
    ret, args = protos[spec.name]
    assert C_TO_CTYPES[ret] == spec.restype, (spec.name, ret)
    assert len(args) == len(spec.argtypes), (spec.name, args)
    for i, (c_type, ct) in enumerate(zip(args, spec.argtypes, strict=True)):
        assert c_type in C_TO_CTYPES, f"{spec.name} arg {i}: unmapped C type {c_type!r}"
        assert C_TO_CTYPES[c_type] == ct, f"{spec.name} arg {i}: header {c_type!r}, binding {ct}"


@pytest.mark.parametrize("enum_cls", [hccl.HcclResult, hccl.HcclReduceOp, hccl.HcclDataType],
                         ids=lambda e: e.__name__)
def test_enum_values_match_header(headers, enum_cls):
    parsed = _parse_enums(headers["hccl_types.h"])[enum_cls.__name__]
    for member in enum_cls:
        assert parsed.get(member.name) == member.value, (member.name, parsed.get(member.name))


def test_root_info_size_matches_header(headers):
    m = re.search(r"HCCL_ROOT_INFO_BYTES\s*=\s*(\d+)", headers["hccl_types.h"])
    assert m is not None
    assert ctypes.sizeof(hccl.HcclRootInfo) == int(m.group(1))


# torch dtype -> the hccl_types.h enumerator naming the same element type.
DTYPE_NAMES = {
    torch.int8: "HCCL_DATA_TYPE_INT8", torch.int16: "HCCL_DATA_TYPE_INT16",
    torch.int32: "HCCL_DATA_TYPE_INT32", torch.int64: "HCCL_DATA_TYPE_INT64",
    torch.uint8: "HCCL_DATA_TYPE_UINT8", torch.float16: "HCCL_DATA_TYPE_FP16",
    torch.float32: "HCCL_DATA_TYPE_FP32", torch.float64: "HCCL_DATA_TYPE_FP64",
    torch.bfloat16: "HCCL_DATA_TYPE_BFP16",
}


@pytest.mark.parametrize("dtype", list(DTYPE_NAMES), ids=str)
def test_dtype_mapping_matches_header(headers, dtype):
    values = _parse_enums(headers["hccl_types.h"])["HcclDataType"]
    assert int(hccl.hccl_dtype(dtype)) == values[DTYPE_NAMES[dtype]]


def test_reduce_op_mapping_matches_header(headers):
    values = _parse_enums(headers["hccl_types.h"])["HcclReduceOp"]
    ops = torch.distributed.ReduceOp
    assert int(hccl.hccl_reduce_op(ops.SUM)) == values["HCCL_REDUCE_SUM"]
    assert int(hccl.hccl_reduce_op(ops.MAX)) == values["HCCL_REDUCE_MAX"]
    assert int(hccl.hccl_reduce_op(ops.MIN)) == values["HCCL_REDUCE_MIN"]
    assert int(hccl.hccl_reduce_op(ops.PRODUCT)) == values["HCCL_REDUCE_PROD"]


def test_unsupported_dtype_and_op_raise():
    with pytest.raises(TypeError, match="complex64"):
        hccl.hccl_dtype(torch.complex64)
    with pytest.raises(ValueError, match="op"):
        hccl.hccl_reduce_op(torch.distributed.ReduceOp.AVG)


def test_missing_library_is_a_clear_error(monkeypatch, tmp_path):
    missing = str(tmp_path / "libhccl.so")
    monkeypatch.setenv("HCCL_SO_PATH", missing)
    assert hccl.library_path() == missing
    with pytest.raises(hccl.HcclLibraryError) as info:
        hccl.HCCLLibrary()
    msg = str(info.value)
    assert missing in msg and "HCCL_SO_PATH" in msg and "set_env.sh" in msg


def test_default_library_name(monkeypatch):
    monkeypatch.delenv("HCCL_SO_PATH", raising=False)
    assert hccl.library_path() == "libhccl.so"


def test_library_without_hccl_symbols_is_rejected():
    with pytest.raises(hccl.HcclLibraryError, match="no symbol HcclGetErrorString"):
        hccl.HCCLLibrary("libc.so.6")
