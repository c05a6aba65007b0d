# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The start-up line's kernel part (kernel_report.summary): each op family's backend with the
reason ``vllm-ascend doctor`` gives for it (kernel_report.families), on one line."""

from __future__ import annotations

import logging

import pytest
from vllm_ascend_platform.host import kernel_report
from vllm_ascend_platform.startup import config_defaults


@pytest.mark.parametrize("mode", ["emulation", "simulated-npu", None])
def test_summary_carries_doctors_reason_for_every_family(mode, monkeypatch):
    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)
    monkeypatch.delenv("VLLM_ASCEND_SIMULATE_NPU", raising=False)
    line = kernel_report.summary(mode)
    assert "\n" not in line
    group_of = {}  # family -> its "<backend>: <families> (<reason>)" group
    for group in line.split("; "):
        families = group.split(": ", 1)[1].split(" (", 1)[0]
        group_of.update({family: group for family in families.split(", ")})
    for fb in kernel_report.families(mode):
        assert group_of[fb.family].startswith(f"{fb.backend or 'UNAVAILABLE'}: ")
        assert group_of[fb.family].endswith(f" ({fb.reason})"), (fb, group_of[fb.family])


def test_startup_line_names_backend_and_reason(monkeypatch, caplog):
    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)
    monkeypatch.delenv("VLLM_ASCEND_SIMULATE_NPU", raising=False)
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")

    class FakePlatform:
        @staticmethod
        def get_device_name() -> str:
            return "Ascend910B (test)"

    with caplog.at_level(logging.INFO, logger="vllm.ascend"):
        config_defaults._log_startup_line(FakePlatform, None)
    lines = [r.getMessage() for r in caplog.records if "kernels: " in r.getMessage()]
    assert len(lines) == 1 and "mode=CPU emulation" in lines[0]
    kernels = lines[0].split("kernels: ", 1)[1]
    assert kernels == kernel_report.summary("emulation")
    reasons = {fb.reason for fb in kernel_report.families("emulation")}
    assert all(f"({reason})" in kernels for reason in reasons)
