# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Front-door failures through real server starts (vLLM version, ``additional_config``, plugin selection).

Each start here must stop before model loading, so each costs a process start, not
an engine start. The passing starts of these cases live in test_server.py (one shared
server). Expected behaviour: the platform's front door (packages/ascend-platform/README.md) and
vLLM 0.32's plugin loader (VLLM_PLUGINS is an allowlist split on ",": the empty string loads nothing).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_server_helpers import SERVER_MODULE, demo_model_path, emulation_env, run_to_exit

# Loads vLLM, fakes its version before the platform plugin runs, then runs the server module.
PATCHED = ("import sys, runpy, vllm; vllm.__version__ = sys.argv.pop(1); "
           f"sys.argv[0] = {SERVER_MODULE!r}; runpy.run_module({SERVER_MODULE!r}, run_name='__main__')")
MODEL_LOADING = ("Loading model", "Loading weights", "Starting to load model")


@pytest.fixture(scope="module")
def model() -> str:
    return demo_model_path()


def _serve(model: str, *extra: str, env: dict | None = None, version: str | None = None):
    args = ["--model", model, "--max-model-len", "512", "--dtype", "float32", "--port", "1", *extra]
    if version is None:
        cmd = [sys.executable, "-m", SERVER_MODULE, *args]
    else:
        cmd = [sys.executable, "-c", PATCHED, version, *args]
    return run_to_exit(cmd, env or emulation_env())


def _help(version: str | None, env=None):
    if version is None:
        cmd = [sys.executable, "-m", SERVER_MODULE, "--help"]
    else:
        cmd = [sys.executable, "-c", PATCHED, version, "--help"]
    return run_to_exit(cmd, env or emulation_env())


# ---- vLLM version-----------------------------------------------------------------------------------
def test_c17_a_supported_help_works():
    code, out = _help(None)
    assert code == 0 and "--additional-config" in out


def test_c17_c_dev_build_help_works():
    code, out = _help("0.32.1.dev12+gabc123")
    assert code == 0 and "--additional-config" in out


def test_c17_b_unsupported_help_refused_in_one_line():
    code, out = _help("0.30.0")
    assert code == 1
    lines = [ln for ln in out.splitlines() if "0.30.0" in ln]
    assert lines and all("(supports vLLM >=0.32,<0.33)" in ln for ln in lines)
    assert "Traceback" not in out


def test_c17_b_unsupported_start_refused_before_model_loading(model):
    code, out = _serve(model, version="0.30.0")
    assert code == 1
    assert ("vLLM 0.30.0 is installed, but these Ascend layers do not support it: "
            "vllm-ascend-platform") in out
    assert "pip install 'vllm>=0.32,<0.33'" in out
    assert "VLLM_ASCEND_SKIP_VERSION_CHECK=1" in out
    assert "Traceback" not in out
    assert not any(marker in out for marker in MODEL_LOADING)


def test_c17_b_opt_in_runs_with_warning():
    code, out = _help("0.30.0", env=emulation_env(VLLM_ASCEND_SKIP_VERSION_CHECK="1"))
    assert code == 0 and "--additional-config" in out
    assert "VLLM_ASCEND_SKIP_VERSION_CHECK is set: running anyway, unsupported" in out


# ---- additional_config-----------------------------------------------------------------------------
def test_c18_b_misspelled_key(model):
    code, out = _serve(model, "--additional-config", '{"enable_weigth_nz": false}')
    assert code != 0
    assert "unknown key 'enable_weigth_nz'; did you mean 'enable_weight_nz'?" in out
    assert not any(marker in out for marker in MODEL_LOADING)


def test_c18_c_wrong_types(model):
    code, out = _serve(model, "--additional-config",
                       '{"ascend_compilation_config": {"fuse_swiglu": "true"}}')
    assert code != 0
    assert "key 'ascend_compilation_config.fuse_swiglu' expects a JSON boolean" in out
    code, out = _serve(model, "--additional-config", '{"enable_weight_nz": {"on": true}}')
    assert code != 0 and "key 'enable_weight_nz' expects a JSON boolean" in out


@pytest.mark.parametrize("text", ['{"enable_weight_nz": tru}', '{"enable_weight_nz": true'])
def test_c18_d_malformed_json_is_a_parse_error(model, text):
    code, out = _serve(model, "--additional-config", text)
    assert code == 2  # argparse usage error, before any engine work
    assert "argument --additional-config" in out
    assert not any(marker in out for marker in MODEL_LOADING)


# ---- plugin selection-----------------------------------------------------------------------------
def test_c21_b_misspelled_plugin_named_with_discovered(model):
    code, out = _serve(model, env=emulation_env(VLLM_PLUGINS="ascend,ascend_layrs"))
    assert code != 0
    assert "VLLM_PLUGINS names 'ascend_layrs', which no installed package provides" in out
    assert "vllm.general_plugins: ascend_layers" in out and "vllm.platform_plugins: ascend" in out
    assert not any(marker in out for marker in MODEL_LOADING)


def test_c21_c_empty_string_loads_no_plugin():
    # vLLM documents VLLM_PLUGINS="" as an allowlist matching no plugin: vLLM's own platform runs
    env = emulation_env(VLLM_PLUGINS="")
    proc = subprocess.run(
        [sys.executable, "-c", "from vllm.platforms import current_platform as p; "
         "print('PLATFORM', type(p).__module__)"], env=env, capture_output=True, text=True,
        timeout=300)
    assert "PLATFORM vllm.platforms.cpu" in proc.stdout
    assert "vllm-ascend" not in proc.stdout + proc.stderr  # our code never ran
    doctor = subprocess.run([sys.executable, "-m", "vllm_ascend.cli", "doctor"], env=env,
                            capture_output=True, text=True, timeout=300)
    assert doctor.returncode == 1
    assert "vLLM loads no plugin at all, so the Ascend platform (and emulation) cannot run" \
        in doctor.stdout


def test_c21_d_platform_without_layers_fails_clearly(model):
    code, out = _serve(model, env=emulation_env(VLLM_PLUGINS="ascend"))
    assert code != 0
    assert "layers are not registered: VLLM_PLUGINS='ascend' names 'ascend' but not " \
           "'ascend_layers'" in out
    assert not any(marker in out for marker in MODEL_LOADING)
