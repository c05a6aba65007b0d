# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""One layer upgraded alone, from wheels: the layer-skew check at engine start-up.

The meta-package declares which layer versions go together (``vllm-ascend-graph>=0.2,<0.3`` in
its ``[all]`` extra); ``vllm_ascend_platform.startup.version_check`` compares the installed layers with
those ranges and the meta-package's general plugin refuses to start on a mismatch, naming the vLLM
range the layer supports and the one of the layers in range. pip itself does not stop
``pip install vllm-ascend-graph==0.3.0`` (the range sits in an extra), which is why the check
exists. A PATCH release inside the range must start normally.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import venvs
import wheelhouse as wh
from conftest import PLUGIN_ENV

PROBE = str(Path(__file__).with_name("startup_probe.py"))
LAYER = "vllm-ascend-graph"


@pytest.fixture(scope="module")
def model_dir():
    from vllm_ascend import demo_model

    return demo_model.prepare()


@pytest.fixture(scope="module")
def bumped(tmp_path_factory) -> Path:
    """A find-links folder with graph 0.3.0 (MINOR bump, outside <0.3) and 0.2.1 (PATCH)."""
    out = tmp_path_factory.mktemp("bumped")
    for version in ("0.3.0", "0.2.1"):
        wh.build_variant("ascend-graph", version, out)
    return out


@pytest.fixture(scope="module")
def skew_venv(tmp_path_factory, wheelhouse) -> venvs.Venv:
    venv = venvs.overlay_venv(tmp_path_factory.mktemp("venv-skew") / "v")
    venv.pip_install([wheelhouse], "vllm-ascend[all]")
    return venv


def test_minor_bump_outside_the_range_is_refused(skew_venv, bumped, wheelhouse, model_dir):
    skew_venv.pip_install([bumped, wheelhouse], f"{LAYER}==0.3.0")
    assert skew_venv.dist_version(LAYER) == "0.3.0"
    proc = skew_venv.run(PROBE, str(model_dir), env=PLUGIN_ENV, check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, "start-up with a skewed layer should refuse"
    assert "LayerRegistrationError" in out and "layer versions do not match" in out, out[-3000:]
    # names the layer, the installed version, the vLLM range it supports (its description: the
    # rebuilt wheel changed only __version__), the meta-package's range, the vLLM range of the
    # layers in range, and a pip command
    assert (f"layer {LAYER} 0.3.0 (supports vLLM >=0.34,<0.35) does not satisfy vllm-ascend's "
            f"range {LAYER}<0.3,>=0.2 (the layers in that range support vLLM >=0.34,<0.35)"
            in out), out[-3000:]
    assert "pip install" in out, out[-3000:]
    for other in ("layer vllm-ascend-attention 0.2.0", "layer ascend-ops 0.2.0"):
        assert other not in out


def test_patch_bump_inside_the_range_starts(skew_venv, bumped, wheelhouse, model_dir):
    skew_venv.pip_install([bumped, wheelhouse], f"{LAYER}==0.2.1")
    assert skew_venv.dist_version(LAYER) == "0.2.1"
    proc = skew_venv.run(PROBE, str(model_dir), env=PLUGIN_ENV, timeout=600)
    import json

    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["module"] == "vllm_ascend_platform.platform"
    assert result["layers"] == {"attention": "0.2.0", "models": "0.2.0", "comm": "0.2.0",
                                "graph": "0.2.1"}
