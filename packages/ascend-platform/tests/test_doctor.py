# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``vllm-ascend doctor`` (README.md, "Three modes"; docs/architecture.md).

Runs in subprocesses so the environment (VLLM_PLUGINS, VLLM_ASCEND_EMULATE, the
installed packages) is the one a user has. One test builds a venv without vLLM
or torch and checks doctor still runs and names what is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

SITE = Path(sysconfig.get_paths()["purelib"])


def _doctor(env_over: dict[str, str | None], *args: str, python: str = sys.executable):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VLLM_ASCEND", "VLLM_PLUGINS"))}
    env.update({k: v for k, v in env_over.items() if v is not None})
    code = "import sys; from vllm_ascend_platform.doctor import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([python, "-c", code, *args], capture_output=True, text=True,
                          env=env, timeout=240)


@pytest.mark.requires_meta
def test_emulation_report_is_ok():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1"}, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import torch
    import vllm

    assert report["mode"] == "emulation"
    assert report["versions"]["vllm"] == vllm.__version__
    # the runner the worker builds: Model Runner V2 (vLLM 0.34 deleted Model Runner V1,
    # vllm/v1/worker/gpu_model_runner.py; docs/model-runner-v2.md)
    assert report["runner"] == "MRv2 (NPUModelRunnerV2 over vllm/v1/worker/gpu/model_runner.py)"
    assert report["versions"]["torch"] == torch.__version__
    assert report["versions"]["torch_npu"] is None
    assert report["devices"] and "emulated" in report["devices"][0]
    layers = {entry["dist"]: entry for entry in report["layers"]}
    assert set(layers) == {"ascend-ops", "vllm-ascend-platform", "vllm-ascend-attention",
                           "vllm-ascend-models", "vllm-ascend-comm", "vllm-ascend-graph"}
    assert layers["vllm-ascend-platform"]["version"] == "0.2.0" and layers["vllm-ascend-platform"]["ok"]
    assert "ascend" in report["plugins"]["would_load"]["vllm.platform_plugins"]
    assert report["problems"] == []


def test_simulated_npu_mode_reported():
    proc = _doctor({"VLLM_ASCEND_SIMULATE_NPU": "1"}, "--json")
    report = json.loads(proc.stdout)
    assert report["mode"] == "simulated-npu"
    assert report["devices"] and "simulated NPU" in report["devices"][0]


def test_simulated_npu_with_emulation_is_a_problem():
    proc = _doctor({"VLLM_ASCEND_SIMULATE_NPU": "1", "VLLM_ASCEND_EMULATE": "1"}, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert any("both set" in p for p in report["problems"]), report["problems"]
    assert report["mode"] == "refused" and report["devices"] == []


def test_simulated_npu_without_schema_wheel_is_a_problem(tmp_path):
    proc = _doctor({"VLLM_ASCEND_SIMULATE_NPU": "1", "ASCEND_OPS_TORCH_NPU_CACHE": str(tmp_path)},
                   "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stdout
    assert any("torch-npu wheel" in p and "--fetch" in p for p in report["problems"])


@pytest.mark.requires_meta
def test_text_report_sections():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1"})
    out = proc.stdout
    for heading in ("mode:      emulation", "versions:  vllm ", "runner:    ", "layers:",
                    "plugins:", "patches:", "kernels:", "result:    OK"):
        assert heading in out, out
    # the registry's declarations, e.g. the scoped swap of the CUDA stream API
    assert "device-stream-api (torch:cuda, scoped" in out
    assert "vllm.platform_plugins: ascend -> vllm_ascend:register [loads]" in out


@pytest.mark.requires_meta
def test_empty_vllm_plugins_says_nothing_loads_and_fails():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1", "VLLM_PLUGINS": ""})
    assert proc.returncode == 1
    assert "vLLM loads no plugin at all" in proc.stdout and "emulation) cannot run" in proc.stdout
    assert "vllm.platform_plugins: ascend -> vllm_ascend:register [skipped]" in proc.stdout


@pytest.mark.requires_meta
def test_platform_without_layers_plugin_fails():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1", "VLLM_PLUGINS": "ascend"})
    assert proc.returncode == 1
    assert "'ascend_layers' will not load" in proc.stdout


def test_misspelled_plugin_named():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1", "VLLM_PLUGINS": "ascend,ascend_layers,ascnd"})
    assert proc.returncode == 1
    assert "VLLM_PLUGINS names 'ascnd'" in proc.stdout


@pytest.mark.requires_meta
def test_inactive_without_signal_is_not_an_error():
    proc = _doctor({})
    assert proc.returncode == 0
    assert "mode:      inactive" in proc.stdout and "VLLM_ASCEND_EMULATE=1" in proc.stdout


def _link(dst: Path, names: list[str]) -> None:
    for name in names:
        for src in SITE.glob(name):
            (dst / src.name).symlink_to(src)


@pytest.fixture(scope="module")
def venv_without_vllm(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("novllm")
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python*/site-packages"))
    # only the platform's own declared dependencies (and theirs) plus our editable installs
    _link(site, ["pydantic", "pydantic-*.dist-info", "pydantic_core", "pydantic_core-*.dist-info",
                 "annotated_types*", "typing_extensions*", "typing_inspection*", "packaging",
                 "packaging-*.dist-info", "psutil", "psutil-*.dist-info",
                 "vllm_ascend_platform-*.dist-info", "ascend_ops-*.dist-info",
                 "vllm_ascend-*.dist-info", "_editable_impl_vllm_ascend.pth",
                 "_editable_impl_vllm_ascend_platform.pth"])
    return str(root / "bin" / "python")


def test_runs_in_a_venv_without_vllm(venv_without_vllm):
    check = subprocess.run([venv_without_vllm, "-c", "import vllm"], capture_output=True)
    assert check.returncode != 0  # the venv really has no vLLM
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1"}, python=venv_without_vllm)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vllm not installed" in proc.stdout
    assert "runner:    n/a (no vLLM)" in proc.stdout
    assert ("PROBLEM:   vLLM is not installed: install vLLM '>=0.34,<0.35' built from its source "
            "for the empty target (VLLM_TARGET_DEVICE=empty") in proc.stdout
    assert "PROBLEM:   torch is not installed" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("memory, fix", [("lots", "use e.g. 8GiB"), ("4096GiB", "lower it")])
def test_bad_emulated_device_memory_is_a_problem(memory, fix):
    """The engine refuses these values at start-up (``envs.emulated_device_memory``), so doctor
    must not report them as a working device."""
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1", "VLLM_ASCEND_EMULATE_DEVICE_MEMORY": memory})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # only the memory problem counts: the layer's own session also lacks the meta-package
    problems = [line for line in proc.stdout.splitlines()
                if line.startswith("PROBLEM:") and "VLLM_ASCEND_EMULATE_DEVICE_MEMORY" in line]
    assert len(problems) == 1, proc.stdout
    assert f"VLLM_ASCEND_EMULATE_DEVICE_MEMORY={memory!r}" in problems[0] or (
        f"VLLM_ASCEND_EMULATE_DEVICE_MEMORY={memory} " in problems[0]), problems
    assert fix in problems[0], problems
    assert "result:    INCOMPATIBLE" in proc.stdout


def test_emulated_device_memory_shown_parsed():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1", "VLLM_ASCEND_EMULATE_DEVICE_MEMORY": "512MiB"},
                   "--json")
    report = json.loads(proc.stdout)
    assert report["devices"] == ["emulated NPU on cpu, device memory 0.500 GiB "
                                 "(VLLM_ASCEND_EMULATE_DEVICE_MEMORY=512MiB)"]


def test_unknown_ascend_variable_named_with_closest():
    proc = _doctor({"VLLM_ASCEND_EMULATE": "1", "VLLM_ASCEND_EMULATE_DEVICE_MEMROY": "2GiB"})
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note:")]
    assert notes == ["note:      VLLM_ASCEND_EMULATE_DEVICE_MEMROY is not a vllm-ascend variable "
                     "and is ignored; did you mean VLLM_ASCEND_EMULATE_DEVICE_MEMORY?"], proc.stdout



def test_kernel_backends_per_family_and_missing_native_module(monkeypatch):
    """Emulation: every op family's backend with its reason; ``_C`` that failed to import is a
    problem naming the import failure and the fix unless the reference backend is chosen."""
    from ascend_ops import _dispatch, backends
    from vllm_ascend_platform import doctor

    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)
    problems: list[str] = []
    kernels = {k["family"]: k for k in doctor._kernels("emulation", problems)}
    assert set(kernels) == set(backends.FAMILIES)
    assert kernels["mla"]["backend"] == "reference"  # no compiled MLA kernel
    if _dispatch.native_available():
        assert problems == []
        assert kernels["norm"]["backend"] == "native" and "_C" in kernels["norm"]["reason"]
    assert {k["backend"] for k in doctor._kernels("npu", [])} == {"npu"}
    assert doctor._kernels("inactive", []) == []

    monkeypatch.setattr(_dispatch, "_native_module", None)
    monkeypatch.setattr(_dispatch, "_native_error", "ImportError: undefined symbol: omp_x")
    problems = []
    kernels = {k["family"]: k for k in doctor._kernels("emulation", problems)}
    assert kernels["norm"]["backend"] is None
    (problem,) = problems
    assert problem.startswith("kernels for activation") and "omp_x" in problem
    assert "pip install" in problem and "ASCEND_OPS_BACKEND=reference" in problem
    assert "UNAVAILABLE" in doctor.render({**_minimal_report(), "kernels": list(kernels.values())})

    monkeypatch.setenv("ASCEND_OPS_BACKEND", "reference")
    problems = []
    assert {k["backend"] for k in doctor._kernels("emulation", problems)} == {"reference"}
    assert problems == []


def _minimal_report() -> dict:
    return {"mode": "emulation", "devices": [], "soc": None, "layers": [], "patches": [],
            "versions": {"vllm": None, "torch": None, "torch_npu": None, "cann": None},
            "plugins": {"why": "", "discovered": {}, "would_load": {}}, "notes": [],
            "problems": [], "ok": True}
