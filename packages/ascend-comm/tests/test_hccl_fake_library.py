# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""HCCLLibrary end to end through ctypes against a single-rank fake ``libhccl.so``.

The fake (``fake_hccl.cc``) is compiled here against the real ``hccl.h`` from the torch-npu 2.13.0
wheel, so its definitions carry the header's prototypes; with one rank every collective is a
copy. This checks that pointers, element counts, dtypes, reduction ops, peers and stream handles
arrive as the header expects, and that error codes become ``HcclError``. Needs g++ (skips with
the reason otherwise) and the cached wheel (see test_hccl_binding: fails under CI without it).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import zipfile

import pytest
import torch
from test_hccl_binding import HEADER_DIR, _wheel
from vllm_ascend_comm import hccl

ACL_STUB = ("#pragma once\n#include <stdbool.h>\n#include <stddef.h>\ntypedef void *aclrtStream;\n"
            "typedef void *aclrtDrvMemHandle;\n")


@pytest.fixture(scope="module")
def fake_lib(tmp_path_factory):
    whl = _wheel()
    cc = shutil.which("g++") or shutil.which("c++")
    if cc is None:
        pytest.skip("no C++ compiler (g++/c++) to build the fake libhccl.so")
    root = tmp_path_factory.mktemp("fakehccl")
    with zipfile.ZipFile(whl) as zf:
        for name in ("hccl.h", "hccl_types.h"):
            zf.extract(HEADER_DIR + name, root)
    (root / "acl").mkdir()
    (root / "acl" / "acl.h").write_text(ACL_STUB)
    so = root / "libhccl_fake.so"
    src = os.path.join(os.path.dirname(__file__), "fake_hccl.cc")
    inc = root / "torch_npu" / "include"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-Werror", "-x", "c++", src, "-o", str(so),
         f"-I{inc}", f"-I{inc / 'third_party' / 'hccl' / 'inc'}", f"-I{root}"],
        check=True, capture_output=True,
    )
    lib = hccl.HCCLLibrary(str(so))
    return lib, ctypes.CDLL(str(so))


def _last(raw, name, restype=ctypes.c_int):
    fn = getattr(raw, name)
    fn.restype = restype
    return fn()


def test_env_var_selects_library(fake_lib, monkeypatch):
    lib, _ = fake_lib
    monkeypatch.setenv("HCCL_SO_PATH", lib.path)
    assert hccl.HCCLLibrary().path == lib.path


def test_root_info_and_comm_init(fake_lib):
    lib, _ = fake_lib
    info = lib.get_root_info()
    assert bytes(info.internal)[:4] == b"\x5a" * 4
    comm = lib.comm_init_root_info(1, info, 0)
    assert comm  # a non-null HcclComm
    lib.comm_destroy(comm)


def test_all_reduce_arguments_arrive(fake_lib):
    lib, raw = fake_lib
    comm = lib.comm_init_root_info(1, lib.get_root_info(), 0)
    x = torch.arange(7, dtype=torch.float32)
    out = torch.zeros(7, dtype=torch.float32)
    lib.all_reduce(x.data_ptr(), out.data_ptr(), x.numel(), hccl.hccl_dtype(x.dtype),
                   hccl.hccl_reduce_op(torch.distributed.ReduceOp.MAX), comm, 0xBEEF)
    assert torch.equal(out, x)
    assert _last(raw, "fake_last_count", ctypes.c_uint64) == 7
    assert _last(raw, "fake_last_dtype") == hccl.HcclDataType.HCCL_DATA_TYPE_FP32
    assert _last(raw, "fake_last_op") == hccl.HcclReduceOp.HCCL_REDUCE_MAX
    assert _last(raw, "fake_last_stream", ctypes.c_void_p) == 0xBEEF


def test_gather_scatter_p2p_arguments_arrive(fake_lib):
    lib, raw = fake_lib
    comm = lib.comm_init_root_info(1, lib.get_root_info(), 0)
    x = torch.arange(5, dtype=torch.int64)
    out = torch.zeros(5, dtype=torch.int64)
    lib.all_gather(x.data_ptr(), out.data_ptr(), 5, hccl.hccl_dtype(torch.int64), comm, None)
    assert torch.equal(out, x)
    assert _last(raw, "fake_last_dtype") == hccl.HcclDataType.HCCL_DATA_TYPE_INT64
    out.zero_()
    lib.reduce_scatter(x.data_ptr(), out.data_ptr(), 5, hccl.hccl_dtype(torch.int64),
                       hccl.HcclReduceOp.HCCL_REDUCE_SUM, comm, None)
    assert torch.equal(out, x)
    lib.send(x.data_ptr(), 5, hccl.hccl_dtype(torch.int64), 3, comm, None)
    assert _last(raw, "fake_last_peer", ctypes.c_uint32) == 3
    lib.recv(out.data_ptr(), 2, hccl.hccl_dtype(torch.bfloat16), 9, comm, None)
    assert _last(raw, "fake_last_peer", ctypes.c_uint32) == 9
    assert _last(raw, "fake_last_count", ctypes.c_uint64) == 2
    assert _last(raw, "fake_last_dtype") == hccl.HcclDataType.HCCL_DATA_TYPE_BFP16
    lib.broadcast(x.data_ptr(), 5, hccl.hccl_dtype(torch.int64), 0, comm, None)
    assert _last(raw, "fake_last_peer", ctypes.c_uint32) == 0


def test_error_code_raises_hccl_error(fake_lib):
    lib, _ = fake_lib
    with pytest.raises(hccl.HcclError, match="HcclCommDestroy.*error 2.*fake: null pointer") as info:
        lib.comm_destroy(None)
    assert info.value.code == hccl.HcclResult.HCCL_E_PTR
