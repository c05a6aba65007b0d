"""register(), the vLLM version check, and the stateless process-group hook."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import vllm_ascend_comm
from vllm_ascend_comm._version_check import check_vllm_version, parse_release
from vllm_ascend_comm.stateless import stateless_init_device_torch_dist_pg


def test_register_is_idempotent():
    vllm_ascend_comm.register()
    vllm_ascend_comm.register()
    assert vllm_ascend_comm.is_registered()


def test_installed_vllm_is_accepted():
    import vllm

    assert check_vllm_version() == vllm.__version__


@pytest.mark.parametrize("version", ["0.31.2", "0.33.0", "1.0.0"])
def test_other_vllm_versions_are_refused_with_the_fix(version):
    with pytest.raises(RuntimeError) as info:
        check_vllm_version(version)
    msg = str(info.value)
    assert version in msg and "0.32" in msg and "pip install" in msg


def test_parse_release_forms():
    assert parse_release("0.32.0+cpu") == (0, 32, 0)
    assert parse_release("0.32.1rc1") == (0, 32, 1)
    assert parse_release("v0.32") == (0, 32, 0)
    with pytest.raises(ValueError, match="nightly"):
        parse_release("nightly")


def test_communicator_name_resolves():
    from vllm.utils.import_utils import resolve_obj_by_qualname
    from vllm_ascend_comm.communicator import NPUCommunicator

    assert resolve_obj_by_qualname(vllm_ascend_comm.COMMUNICATOR_CLS) is NPUCommunicator
    assert resolve_obj_by_qualname(vllm_ascend_comm.STATELESS_PG_FN) is stateless_init_device_torch_dist_pg


def _store():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = dist.TCPStore("127.0.0.1", port, 1, is_master=True, timeout=timedelta(seconds=10))
    return dist.PrefixStore("test", store)


def test_stateless_gloo_group_works_single_rank():
    pg = stateless_init_device_torch_dist_pg("gloo", _store(), 0, 1, timedelta(seconds=10))
    assert pg.size() == 1 and pg.rank() == 0
    t = torch.tensor([3.0, 4.0])
    pg.allreduce([t]).wait()
    assert t.tolist() == [3.0, 4.0]


def test_stateless_rejects_bad_arguments():
    with pytest.raises(ValueError, match="backend='nccl'"):
        stateless_init_device_torch_dist_pg("nccl", None, 0, 1, timedelta(seconds=1))
    with pytest.raises(ValueError, match="group_rank=2"):
        stateless_init_device_torch_dist_pg("gloo", None, 2, 2, timedelta(seconds=1))


def test_stateless_hccl_without_torch_npu_says_how_to_fix():
    with pytest.raises(RuntimeError, match="VLLM_ASCEND_EMULATE=1"):
        stateless_init_device_torch_dist_pg("hccl", _store(), 0, 1, timedelta(seconds=1))
