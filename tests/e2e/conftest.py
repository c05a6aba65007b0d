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


SHARED_ENGINE = "default_llm"


@pytest.fixture(scope="module")
def default_llm(model_path):
    """``make_llm(model_path)`` shared by the tests that request it and leave it unchanged
    (engine.py ``shared_llm``): their modules run one after another, and the engine is closed
    once the next test does not request it."""
    from engine import shared_llm

    return shared_llm(model_path)


def pytest_collection_modifyitems(items) -> None:
    """Move every module whose tests use ``default_llm`` to right after the first such module,
    keeping the order otherwise, so they share one engine instead of each building one."""
    users = [i for i, item in enumerate(items) if SHARED_ENGINE in item.fixturenames]
    if not users:
        return
    first_module = items[users[0]].module
    anchor = max(i for i in users if items[i].module is first_module)
    moved_modules = {items[i].module for i in users} - {first_module}
    moved = [item for item in items[anchor + 1:] if item.module in moved_modules]
    rest = [item for item in items[anchor + 1:] if item.module not in moved_modules]
    items[anchor + 1:] = moved + rest


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem) -> None:
    if nextitem is None or SHARED_ENGINE not in nextitem.fixturenames:
        from engine import release_shared_llm

        release_shared_llm()


def pytest_terminal_summary(terminalreporter) -> None:
    """Quote the greedy-parity results (identical / near-tie counts) after the run."""
    if SUMMARY:
        terminalreporter.section("greedy parity vs HF transformers (float32)")
        for line in SUMMARY:
            terminalreporter.write_line(line)
