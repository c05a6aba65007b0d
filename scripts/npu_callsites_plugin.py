# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""pytest plugin (``-p npu_callsites_plugin``): write this pytest process's simulator call sites.

When ``ASCEND_OPS_SIM_CALLSITES_DIR`` is set, at the end of the session the
``ascend_ops.simulator.call_sites()`` seen in this process (``{(file, line): calls}``) are written
to a new JSON file in that folder, in the format ``scripts/npu_coverage.py`` reads:
``{"pid": int, "sites": [[file, line, calls], ...]}``. Calls are folded in after every test too, so
a test that resets the simulator's ledger does not hide the sites it ran before.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from pathlib import Path

ENV = "ASCEND_OPS_SIM_CALLSITES_DIR"
_seen: Counter = Counter()


def _fold() -> None:
    try:
        from ascend_ops import simulator
    except ImportError:
        return
    for site, n in simulator.call_sites().items():
        _seen[site] = max(_seen[site], n)


def pytest_configure(config) -> None:
    try:
        from ascend_ops.simulator import ledger as ledger_module
    except ImportError:
        return
    reset = ledger_module.Ledger.reset

    def folding_reset(self) -> None:  # keep the sites a test ran before it reset the ledger
        if hasattr(self, "calls"):
            for site, n in self.calls.items():
                _seen[site] += n
        reset(self)

    ledger_module.Ledger.reset = folding_reset


def pytest_runtest_teardown(item, nextitem) -> None:
    _fold()


def pytest_sessionfinish(session, exitstatus) -> None:
    folder = os.environ.get(ENV)
    if not folder:
        return
    _fold()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    sites = [[file, int(line), int(n)] for (file, line), n in _seen.items()]
    (out / f"callsites-pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}.json").write_text(
        json.dumps({"pid": os.getpid(), "sites": sites}))
