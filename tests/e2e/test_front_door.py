# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Front-door failures through real server starts (vLLM version, ``additional_config``, plugin selection).

Each start here must stop before model loading, so each costs a process start, not
an engine start. The passing starts of these cases live in test_server.py (one shared
server). Expected behaviour: the platform's front door (packages/ascend-platform/README.md) and
vLLM 0.34's plugin loader (VLLM_PLUGINS is an allowlist split on ",": the empty string loads nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from test_server_helpers import demo_model_path, emulation_env, run_to_exit, vllm_serve

# Loads vLLM, fakes its version before the platform plugin runs, then runs what the `vllm` console
# script runs (vLLM's [project.scripts]: vllm.entrypoints.cli.main:main) with the remaining args.
PATCHED = ("import sys, vllm; vllm.__version__ = sys.argv.pop(1); sys.argv[0] = 'vllm'; "
           "from vllm.entrypoints.cli.main import main; main()")
MODEL_LOADING = ("Loading model", "Loading weights", "Starting to load model")


def _serve(model: str, *extra: str, env: dict | None = None, version: str | None = None):
    """``vllm serve <model> ...`` (with ``version`` faked as vLLM's)."""
    cmd = vllm_serve(model, "--max-model-len", "512", "--dtype", "float32", "--port", "1", *extra)
    if version is not None:
        cmd = [sys.executable, "-c", PATCHED, version, *cmd[1:]]
    return run_to_exit(cmd, env or emulation_env())


def _help(version: str | None, env=None):
    """``vllm serve --help=all`` (with ``version`` faked as vLLM's)."""
    cmd = vllm_serve("--help=all")
    if version is not None:
        cmd = [sys.executable, "-c", PATCHED, version, *cmd[1:]]
    return run_to_exit(cmd, env or emulation_env())


def _no_plugin_runs(env: dict) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """Which platform vLLM picks, then ``vllm-ascend doctor``, both under ``env``."""
    probe = subprocess.run(
        [sys.executable, "-c", "from vllm.platforms import current_platform as p; "
         "print('PLATFORM', type(p).__module__)"], env=env, capture_output=True, text=True,
        timeout=300)
    doctor = subprocess.run([sys.executable, "-m", "vllm_ascend.cli", "doctor"], env=env,
                            capture_output=True, text=True, timeout=300)
    return probe, doctor


# Malformed --additional-config texts (argparse rejects them before any engine work).
MALFORMED = ['{"enable_weight_nz": tru}', '{"enable_weight_nz": true']


@pytest.fixture(scope="module")
def runs():
    """Every process start of this module, begun together and run as many at a time as there are
    cores (2 to 4): each mostly imports vLLM on one core. A test waits for its own result by key."""
    pool = ThreadPoolExecutor(max_workers=min(4, max(2, os.cpu_count() or 1)))
    started: dict[str, Future] = {
        "help": pool.submit(_help, None),
        "help_dev": pool.submit(_help, "0.34.1.dev12+gabc123"),
        "help_old": pool.submit(_help, "0.30.0"),
        "help_old_opt_in": pool.submit(
            _help, "0.30.0", env=emulation_env(VLLM_ASCEND_SKIP_VERSION_CHECK="1")),
        "no_plugin": pool.submit(_no_plugin_runs, emulation_env(VLLM_PLUGINS="")),
    }
    model = demo_model_path()
    started.update({
        "serve_old": pool.submit(_serve, model, version="0.30.0"),
        "misspelled_key": pool.submit(_serve, model, "--additional-config", '{"enable_weigth_nz": false}'),
        "wrong_type_nested": pool.submit(_serve, model, "--additional-config",
                                         '{"ascend_compilation_config": {"fuse_swiglu": "true"}}'),
        "wrong_type_object": pool.submit(_serve, model, "--additional-config",
                                         '{"enable_weight_nz": {"on": true}}'),
        **{f"malformed_{i}": pool.submit(_serve, model, "--additional-config", text)
           for i, text in enumerate(MALFORMED)},
        "misspelled_plugin": pool.submit(_serve, model,
                                         env=emulation_env(VLLM_PLUGINS="ascend,ascend_layrs")),
        "platform_only": pool.submit(_serve, model, env=emulation_env(VLLM_PLUGINS="ascend")),
    })
    yield {key: future.result for key, future in started.items()}
    pool.shutdown(wait=True, cancel_futures=True)


# ---- vLLM version-----------------------------------------------------------------------------------
def test_supported_vllm_help_works(runs):
    code, out = runs["help"]()
    assert code == 0 and "--additional-config" in out


def test_vllm_dev_build_help_works(runs):
    code, out = runs["help_dev"]()
    assert code == 0 and "--additional-config" in out


def test_unsupported_vllm_help_refused_in_one_line(runs):
    code, out = runs["help_old"]()
    assert code == 1
    lines = [ln for ln in out.splitlines() if "0.30.0" in ln]
    assert lines and all("(supports vLLM >=0.34,<0.35)" in ln for ln in lines)
    assert "Traceback" not in out


def test_unsupported_vllm_start_refused_before_model_loading(runs):
    code, out = runs["serve_old"]()
    assert code == 1
    assert ("vLLM 0.30.0 is installed, but these Ascend layers do not support it: "
            "vllm-ascend-platform") in out
    assert "install vLLM '>=0.34,<0.35' built from its source for the empty target" in out
    assert "VLLM_ASCEND_SKIP_VERSION_CHECK=1" in out
    assert "Traceback" not in out
    assert not any(marker in out for marker in MODEL_LOADING)


def test_unsupported_vllm_opt_in_runs_with_warning(runs):
    code, out = runs["help_old_opt_in"]()
    assert code == 0 and "--additional-config" in out
    assert "VLLM_ASCEND_SKIP_VERSION_CHECK is set: running anyway, unsupported" in out


# ---- additional_config-----------------------------------------------------------------------------
def test_additional_config_misspelled_key(runs):
    code, out = runs["misspelled_key"]()
    assert code != 0
    assert "unknown key 'enable_weigth_nz'; did you mean 'enable_weight_nz'?" in out
    assert not any(marker in out for marker in MODEL_LOADING)


def test_additional_config_wrong_types(runs):
    code, out = runs["wrong_type_nested"]()
    assert code != 0
    assert "key 'ascend_compilation_config.fuse_swiglu' expects a JSON boolean" in out
    code, out = runs["wrong_type_object"]()
    assert code != 0 and "key 'enable_weight_nz' expects a JSON boolean" in out


@pytest.mark.parametrize("case", range(len(MALFORMED)), ids=MALFORMED)
def test_additional_config_malformed_json_is_a_parse_error(runs, case):
    code, out = runs[f"malformed_{case}"]()
    assert code == 2  # argparse usage error, before any engine work
    assert "argument --additional-config" in out
    assert not any(marker in out for marker in MODEL_LOADING)


# ---- plugin selection-----------------------------------------------------------------------------
def test_misspelled_plugin_named_with_discovered(runs):
    code, out = runs["misspelled_plugin"]()
    assert code != 0
    assert "VLLM_PLUGINS names 'ascend_layrs', which no installed package provides" in out
    assert "vllm.general_plugins: ascend_layers" in out and "vllm.platform_plugins: ascend" in out
    assert not any(marker in out for marker in MODEL_LOADING)


def test_empty_vllm_plugins_loads_no_plugin(runs):
    # vLLM documents VLLM_PLUGINS="" as an allowlist matching no plugin: only vLLM's builtin
    # platforms are probed, and the empty-target build (how Ascend hosts and .venv install vLLM)
    # matches none of them, so vLLM runs on its UnspecifiedPlatform
    # (vllm/platforms/__init__.py, resolve_current_platform_cls_qualname)
    proc, doctor = runs["no_plugin"]()
    assert "PLATFORM vllm.platforms.interface" in proc.stdout
    assert "vllm-ascend" not in proc.stdout + proc.stderr  # our code never ran
    assert doctor.returncode == 1
    assert "vLLM loads no plugin at all, so the Ascend platform (and emulation) cannot run" \
        in doctor.stdout


def test_platform_without_layers_fails_clearly(runs):
    code, out = runs["platform_only"]()
    assert code != 0
    assert "layers are not registered: VLLM_PLUGINS='ascend' names 'ascend' but not " \
           "'ascend_layers'" in out
    assert not any(marker in out for marker in MODEL_LOADING)
