# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The device runtime seam on a machine without torch_npu: CPU answers, clear NPU errors."""

from __future__ import annotations

import importlib.util

import pytest
from ascend_ops import device


@pytest.mark.skipif(importlib.util.find_spec("torch_npu") is not None, reason="torch_npu present")
def test_cpu_answers_without_torch_npu():
    assert device.kind() == "cpu"
    assert device.device_count() == 1
    assert device.get_device_name() == "cpu"
    assert device.is_capturing() is False
    device.set_device("cpu")  # no-op, must not raise
    device.manual_seed_all(0)
    from ascend_ops.device import _cpu

    assert device.stream_api() == {"Stream": _cpu.Stream, "Event": _cpu.Event,
                                   "current_stream": _cpu.current_stream, "stream": _cpu.stream}
    with pytest.raises(RuntimeError, match="torch_npu failed to import"):
        device.load_npu_runtime()
    with pytest.raises(RuntimeError, match="torch_npu failed to import"):
        device.hccl_process_group_cls()


def test_cpu_stream_event_surface():
    s = device.Stream()
    with device.stream(s):
        e = device.Event(enable_timing=True, blocking=True)
        e.record()
        e.synchronize()
    assert device.current_stream().query() and e.query()
    names = ("Stream", "Event", "current_stream", "stream")
    assert device.stream_api() == {name: getattr(device, name) for name in names}
