# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""register(), the layer description's published names, and the stateless process-group hook.

The vLLM version check is the platform's (vllm_ascend_platform.startup.version_check), not this layer's.
"""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import vllm_ascend_comm
from vllm_ascend_comm.stateless import stateless_init_device_torch_dist_pg


def test_register_is_idempotent():
    vllm_ascend_comm.register()
    vllm_ascend_comm.register()
    assert vllm_ascend_comm.is_registered()


def test_communicator_name_resolves():
    from vllm.utils.import_utils import resolve_obj_by_qualname
    from vllm_ascend_comm.communicator import NPUCommunicator

    provides = vllm_ascend_comm.LAYER["provides"]
    assert resolve_obj_by_qualname(provides["device_communicator"]) is NPUCommunicator
    stateless = resolve_obj_by_qualname(provides["stateless_process_group"])
    assert stateless is stateless_init_device_torch_dist_pg


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
