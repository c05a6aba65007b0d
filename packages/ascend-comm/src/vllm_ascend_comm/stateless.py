# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``stateless_init_device_torch_dist_pg``: the platform hook vLLM uses for stateless device groups.

vLLM calls ``current_platform.stateless_init_device_torch_dist_pg`` from
``stateless_init_torch_distributed_process_group`` (``vllm/distributed/utils.py``) for every
backend except ``gloo`` (data-parallel groups, elastic EP). The signature is the one of
``Platform.stateless_init_device_torch_dist_pg`` in ``vllm/platforms/interface.py``.
``NPUPlatform`` forwards its classmethod here.
"""

from __future__ import annotations

from datetime import timedelta

import torch
from torch.distributed import PrefixStore, ProcessGroup


def stateless_init_device_torch_dist_pg(
    backend: str,
    prefix_store: PrefixStore,
    group_rank: int,
    group_size: int,
    timeout: timedelta,
) -> ProcessGroup:
    """Build a ``ProcessGroup`` of ``group_size`` ranks over ``prefix_store`` without the global group.

    ``backend``: ``"hccl"`` (NPU: torch_npu's ``ProcessGroupHCCL`` registered for device ``npu``)
    or ``"gloo"`` (CPU emulation: vLLM's ``init_gloo_process_group``). ``group_rank`` is this
    process's rank in ``[0, group_size)``; ``timeout`` bounds every collective. Raises ValueError
    for any other backend or an out-of-range rank, RuntimeError (with the fix) when ``hccl`` is
    asked for but torch_npu is not importable.
    """
    if not 0 <= group_rank < group_size:
        raise ValueError(f"group_rank={group_rank} must be in [0, group_size={group_size})")
    if backend == "gloo":
        from vllm.distributed.utils import init_gloo_process_group

        return init_gloo_process_group(prefix_store, group_rank, group_size, timeout)
    if backend != "hccl":
        raise ValueError(
            f"backend={backend!r} is not an Ascend process-group backend; use 'hccl' on NPU "
            "or 'gloo' in CPU emulation"
        )
    from ascend_ops import device

    try:
        ProcessGroupHCCL = device.hccl_process_group_cls()
    except RuntimeError as exc:
        raise RuntimeError(
            f"backend='hccl' needs torch_npu ({exc}); install torch_npu with CANN on the Ascend "
            "host, or run CPU emulation (VLLM_ASCEND_EMULATE=1), whose backend is gloo"
        ) from exc
    pg = ProcessGroup(prefix_store, group_rank, group_size)
    options = ProcessGroupHCCL.Options()
    options._timeout = timeout
    backend_impl = ProcessGroupHCCL(prefix_store, group_rank, group_size, options)
    backend_impl._set_sequence_number_for_group()
    backend_type = ProcessGroup.BackendType.CUSTOM
    pg._set_default_backend(backend_type)
    pg._register_backend(torch.device("npu"), backend_type, backend_impl)
    return pg
