# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``pip install vllm-ascend`` alone (meta-package + platform + ascend-ops, no optional layer).

Expected (docs/releasing.md, the layer map in README.md): doctor lists the four optional layers
as not installed without calling that a problem; an engine start-up stops with one error that
names the missing layer and the extra that installs it, not an ImportError/AttributeError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PLUGIN_ENV

OPTIONAL = {"vllm-ascend-attention", "vllm-ascend-models", "vllm-ascend-comm", "vllm-ascend-graph"}
PROBE = str(Path(__file__).with_name("startup_probe.py"))


@pytest.fixture(scope="module")
def model_dir():
    from vllm_ascend import demo_model

    return demo_model.prepare()


def test_only_the_required_layers_are_installed(meta_only_venv):
    for dist in OPTIONAL:
        assert meta_only_venv.dist_version(dist) is None, dist
    for dist in ("vllm-ascend", "vllm-ascend-platform", "ascend-ops"):
        assert meta_only_venv.dist_version(dist) == "0.2.0", dist


def test_doctor_lists_the_missing_layers(meta_only_venv):
    # the text report a user reads (one doctor run: each imports vLLM)
    text = meta_only_venv.run("vllm-ascend", "doctor", env=PLUGIN_ENV).stdout
    rows = {line.split()[0]: line for line in text.splitlines()
            if line.startswith("  ") and line.split()[0] in OPTIONAL | {"ascend-ops"}}
    assert set(rows) == OPTIONAL | {"ascend-ops"}, text
    for dist in OPTIONAL:
        assert rows[dist].rstrip().endswith("not installed"), rows[dist]
    assert rows["ascend-ops"].rstrip().endswith(": ok"), rows["ascend-ops"]
    assert "result:    OK" in text, text  # a smaller install is not a mismatch


def test_startup_names_the_extra_to_install(meta_only_venv, model_dir):
    proc = meta_only_venv.run(PROBE, str(model_dir), env=PLUGIN_ENV, check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, "start-up without the models layer should refuse"
    assert "MissingLayerError" in out, out[-3000:]
    assert "vllm-ascend-models" in out and "[models]" in out and "[all]" in out, out[-3000:]
    for crash in ("ImportError", "ModuleNotFoundError", "AttributeError", "Segmentation fault"):
        assert crash not in out, out[-3000:]
