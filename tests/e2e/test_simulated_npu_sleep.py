# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sleep mode on the simulated NPU (docs/simulated-npu.md), ACL graph mode FULL_DECODE_ONLY.

The NPU code path runs over the simulated torch_npu, whose ``mem_get_info`` counts what the
runtime is told about (``account_alloc/account_free``). After ``sleep(1)`` it must report the KV
cache's bytes as free (weights move to host memory, so they are freed from the device too);
after ``sleep(2)`` weights and KV cache. The greedy tokens after each wake-up (graphs replayed
after being captured again over the restored tensors) equal the tokens before the first sleep.
One child process runs the engine.
"""

from __future__ import annotations

import json
import subprocess
import sys

from _sim_npu import HERE
from _sim_npu_child import child_env


def test_sleep_cycles_on_simulated_npu(model_path, tmp_path):
    out, log = tmp_path / "out.json", tmp_path / "child.log"
    with open(log, "w") as f:
        rc = subprocess.run([sys.executable, str(HERE / "_sim_sleep_child.py"), model_path,
                             str(out)], stdout=f, stderr=subprocess.STDOUT, env=child_env(),
                            cwd=str(HERE), timeout=600).returncode
    assert rc == 0 and out.exists(), log.read_text()[-6000:]
    res = json.loads(out.read_text())
    assert res["backend"] == "ascend"
    kv, weights = res["kv_bytes"], res["weights_bytes"]
    assert kv > 0 and weights > 0
    for cycle in res["level1"]:
        assert cycle["freed"] == kv + weights  # level 1: KV freed, weights moved to host
        assert cycle["restored"] == kv + weights
        assert cycle["tokens"] == res["reference"]
        assert cycle["replays_after_wake"] > 0  # decode ran on (re-captured) FULL graphs
    assert res["level2_freed"] == kv + weights
    # --sleep-preserve-parameter-names on the NPU branch: the named weight comes back with the
    # weights tag, the others stay released (zeros) until reload_weights
    assert res["preserved_kept"] and res["preserved_nonzero"] and res["others_zero"]
    assert res["level2_tokens"] == res["reference"]
