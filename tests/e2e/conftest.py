# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared fixtures for the end-to-end tests: the SmolLM2 checkpoint, the HF oracle and the prompts
as token ids (engine helpers: engine.py; prompts: prompts.py).

Environment (set before vLLM is imported): CPU emulation of the Ascend plugin, engine and worker
in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, about half the start-up time, and the
ascend_ops call counters live here), no hub access, torch threads = cores with passive OpenMP waiting.
"""

from __future__ import annotations

import os

os.environ.pop("VLLM_TARGET_DEVICE", None)  # would bypass platform plugins
os.environ["VLLM_ASCEND_EMULATE"] = "1"
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
# Sleeping (not spinning) OpenMP workers: with spinning ones a busy 2-core box runs ~20x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
from hf_oracle import HFOracle  # noqa: E402
from parity import SUMMARY  # noqa: E402
from prompts import PROMPTS  # noqa: E402


@pytest.fixture(scope="session")
def model_path() -> str:
    """The converted SmolLM2-135M-Instruct checkpoint (converted once, then cached)."""
    from vllm_ascend import demo_model

    return str(demo_model.prepare())


@pytest.fixture(scope="session")
def oracle(model_path) -> HFOracle:
    return HFOracle(model_path)


@pytest.fixture(scope="session")
def prompt_ids(oracle) -> list[list[int]]:
    """The 8 prompts as token ids (both sides get ids: tokenization is not under test)."""
    return [oracle.encode_chat(p) if kind == "chat" else oracle.encode_text(p)
            for kind, p in PROMPTS]


def pytest_terminal_summary(terminalreporter) -> None:
    """Quote the greedy-parity results (identical / near-tie counts) after the run."""
    if SUMMARY:
        terminalreporter.section("greedy parity vs HF transformers (float32)")
        for line in SUMMARY:
            terminalreporter.write_line(line)
