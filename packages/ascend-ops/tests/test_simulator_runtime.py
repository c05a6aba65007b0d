# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The simulated torch.npu runtime and ascend_ops.device over it: install, devices, memory
accounting, streams/events, ledger and call sites (docs/simulated-npu.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ascend_ops
import pytest
import torch
from ascend_ops import device, simulator
from ascend_ops.simulator import SimulatedNpuError

pytestmark = pytest.mark.sim_only  # the simulator's own contract

REPO = Path(__file__).resolve().parents[3]
# call sites are paths under packages/*/src: only an editable install (the repo's .venv) has them;
# the nox session installs ascend-ops into a fresh venv as a wheel
IN_REPO = Path(ascend_ops.__file__).resolve().is_relative_to(REPO / "packages")
OPS_NORM = Path(ascend_ops.__file__).resolve().parent / "ops" / "norm.py"


def test_install_is_idempotent_and_puts_torch_npu_in_place(simulated_npu):
    assert simulator.install() is simulated_npu
    assert sys.modules["torch_npu"] is simulated_npu and simulated_npu.npu is torch.npu
    assert simulator.active() and torch.npu.is_available() and torch.npu.is_simulated()
    import importlib.util

    import torch_npu  # noqa: F401  (what ascend_ops.npu.layers does)

    assert sys.modules["torch_npu"] is simulated_npu
    assert importlib.util.find_spec("torch_npu").name == "torch_npu"  # library probes do not raise


def test_uninstall_restores_cpu_mode(simulated_npu):
    simulator.uninstall()
    try:
        assert not simulator.active() and "torch_npu" not in sys.modules and not hasattr(torch, "npu")
        assert device.kind() == "cpu"
        assert ascend_ops._dispatch.select_backend(torch.ones(1)) != "npu"
    finally:
        simulator.install()


def test_install_in_a_fresh_process_is_cheap():
    code = ("import time, torch\nfrom ascend_ops import simulator\nt = time.perf_counter()\n"
            "simulator.install()\nprint(time.perf_counter() - t)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if proc.returncode and "wheel not found" in proc.stderr:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.strip()) < 1.0


def test_devices(simulated_npu):
    assert torch.npu.device_count() == 2 and torch.npu.current_device() == 0
    torch.npu.set_device("npu:1")
    assert torch.npu.current_device() == 1
    with pytest.raises(SimulatedNpuError, match="out of range"):
        torch.npu.set_device(2)
    torch.npu.set_device(0)
    assert torch.npu.get_device_name(0).startswith("Ascend")


def test_memory_accounting(simulated_npu):
    cap = 1 << 30  # the fixture's capacity
    assert torch.npu.mem_get_info() == (cap, cap)
    simulator.account_alloc(300)
    simulator.account_alloc(200)
    simulator.account_free(300)
    assert torch.npu.memory_allocated() == 200
    assert torch.npu.max_memory_allocated() == 500
    assert torch.npu.memory_reserved() == 500  # freed blocks stay cached until empty_cache
    assert torch.npu.mem_get_info() == (cap - 500, cap)
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == 200 and torch.npu.mem_get_info()[0] == cap - 200
    torch.npu.reset_peak_memory_stats()
    assert torch.npu.max_memory_allocated() == 200
    with pytest.raises(torch.OutOfMemoryError, match="simulated NPU out of memory"):
        simulator.account_alloc(cap)
    simulator.install(capacity_bytes=4096)  # a later install changes the capacity, keeps the counts
    assert torch.npu.mem_get_info() == (4096 - 200, 4096) and torch.npu.memory_allocated() == 200


def test_streams_and_events(simulated_npu):
    s = torch.npu.Stream()
    assert torch.npu.current_stream() is not s
    with torch.npu.stream(s):
        assert torch.npu.current_stream() is s
        e = torch.npu.Event(enable_timing=True)
        e.record(s)
        s.wait_event(e)
        end = s.record_event(torch.npu.Event(enable_timing=True))
    with pytest.raises(RuntimeError, match="completed"):
        e.elapsed_time(end)  # the stream has not run its markers yet (asynchronous device)
    end.synchronize()
    assert e.query() and end.query()
    assert torch.npu.current_stream() is not s and e.elapsed_time(end) >= 0
    torch.npu.set_stream(s)
    assert torch.npu.current_stream() is s
    torch.npu.set_stream(None)
    ext = torch.npu.ExternalEvent()
    ext.record(s), ext.wait(s), ext.reset(s)


def test_ascend_ops_device_reports_simulated_npu(simulated_npu):
    assert device.kind() == "npu"
    assert device.current_device() == torch.device("cpu")
    assert device.device_count() == 2 and device.get_device_name().startswith("Ascend")
    device.set_device(1)
    device.set_device(0)
    device.manual_seed_all(0)
    assert device.mem_get_info() == torch.npu.mem_get_info()
    assert device.load_npu_runtime() is simulated_npu
    with pytest.raises(RuntimeError, match="no HCCL"):
        device.hccl_process_group_cls()
    assert device.Stream is torch.npu.Stream and device.ExternalEvent is torch.npu.ExternalEvent
    api = device.stream_api()
    assert api == {"Stream": torch.npu.Stream, "Event": torch.npu.Event,
                   "current_stream": torch.npu.current_stream, "stream": torch.npu.stream}
    s = device.current_stream()
    device.synchronize()
    g = device.Graph()
    x = torch.ones(2)
    g.capture_begin()
    assert device.is_capturing()
    device.graph_task_group_begin(s)
    y = x + 1
    handle = device.graph_task_group_end(s)
    g.capture_end()
    device.graph_task_update_begin(s, handle)
    device.graph_task_update_end(s)  # nothing re-issued: the group now replays nothing
    y.zero_()
    g.replay()
    assert y.tolist() == [0.0, 0.0]


def test_graph_task_api_is_a_no_op_in_cpu_emulation():
    assert device.kind() == "cpu"
    s = device.current_stream()
    device.graph_task_group_begin(s)
    assert device.graph_task_group_end(s) is None
    device.graph_task_update_begin(s, None)
    device.graph_task_update_end(s)
    e = device.ExternalEvent()
    e.record(s), e.wait(s), e.reset(s)


def test_ledger_snapshot_and_reset(simulated_npu):
    x, w = torch.randn(2, 16, dtype=torch.float16), torch.ones(16, dtype=torch.float16)
    ascend_ops.rms_norm(x, w, 1e-6)
    torch.npu.synchronize()
    snap = simulator.ledger().snapshot()
    assert snap["launches"] == {"npu_rms_norm": 1} and snap["host_syncs"] == 1
    simulator.ledger().reset()
    assert simulator.ledger().snapshot()["launches"] == {} and simulator.call_sites() == {}


@pytest.mark.skipif(not IN_REPO, reason="call sites are repo paths: needs ascend_ops imported from the repo")
def test_runtime_call_sites_match_the_static_scan(simulated_npu):
    from moe_samples import run_moe_ops
    from test_simulator_ops import run_dense_ops

    run_dense_ops(torch.bfloat16)
    run_moe_ops(torch.bfloat16)
    device.synchronize()
    device.mem_get_info()
    ran = simulator.call_sites()
    static = simulator.static_call_sites(REPO)
    ops_files = {"packages/ascend-ops/src/ascend_ops/npu/layers.py", "packages/ascend-ops/src/ascend_ops/npu/moe.py",
                 "packages/ascend-ops/src/ascend_ops/device/_npu.py"}
    ours = {site for site in ran if site[0] in ops_files}
    assert ours, "no call site recorded in our NPU modules"
    assert ours <= set(static), f"runtime sites the static scan misses: {ours - set(static)}"
    norm = [site for site, callee in static.items() if callee == "torch_npu().npu_rms_norm"]
    assert len(norm) == 1 and ran[norm[0]] >= 1
    # calls into our NPU modules from the op layer are recorded too: ops/norm.py calls the
    # module the family table picks (npu/layers.py) on the line of its rms_norm call
    norm_call = next(i for i, text in enumerate(OPS_NORM.read_text().splitlines(), 1)
                     if ".pick(\"rms_norm\", x).rms_norm(" in text)
    assert ran.get(("packages/ascend-ops/src/ascend_ops/ops/norm.py", norm_call), 0) >= 1
    assert not any("simulator" in f for f, _ in ran)


@pytest.mark.skipif(not IN_REPO, reason="call sites are repo paths: needs ascend_ops imported from the repo")
def test_constructing_runtime_objects_is_a_call_site(simulated_npu):
    from ascend_ops.device import _npu as device_npu

    line = device_npu.__getattr__.__code__.co_firstlineno  # any line of ours: call from there
    code = compile("\n" * (line - 1) + "torch.npu.Stream(); torch.npu.NPUGraph(); torch.npu.ExternalEvent()",
                   device_npu.__file__, "exec")
    simulator.ledger().reset()
    exec(code, {"torch": torch})
    rel = "packages/ascend-ops/src/ascend_ops/device/_npu.py"
    assert simulator.call_sites() == {(rel, line): 3}


def test_static_scan_rule(tmp_path):
    src = tmp_path / "packages" / "demo" / "src" / "demo"
    src.mkdir(parents=True)
    (src / "m.py").write_text(
        '"""torch_npu.npu_in_docstring(x) is not a call."""\n'
        "import torch\n"
        "def f(x):\n"
        "    torch_npu().npu_a(x)\n"
        "    torch.npu.synchronize()\n"
        "    _npu.rms_norm(x)\n"
        "    y = torch_npu().npu_b.out(\n"
        "        x)\n"
        "    other.npu_c(x)\n"
    )
    assert simulator.static_call_sites(tmp_path) == {
        ("packages/demo/src/demo/m.py", 4): "torch_npu().npu_a",
        ("packages/demo/src/demo/m.py", 5): "torch.npu.synchronize",
        ("packages/demo/src/demo/m.py", 6): "_npu.rms_norm",
        ("packages/demo/src/demo/m.py", 7): "torch_npu().npu_b.out",
    }


def test_ci_fails_instead_of_skipping_without_the_wheel(tmp_path, monkeypatch):
    """The simulated_npu fixture's decision: a missing wheel fails under CI=true, skips elsewhere."""
    from ascend_ops.simulator import schemas
    from conftest import wheel_missing

    monkeypatch.setenv("ASCEND_OPS_TORCH_NPU_CACHE", str(tmp_path))
    monkeypatch.setattr(schemas, "_memo", None)
    with pytest.raises(SimulatedNpuError) as err:
        schemas.published_schemas()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI needs the torch-npu wheel.*--fetch"):
        wheel_missing(err.value)
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="--fetch"):
        wheel_missing(err.value)
