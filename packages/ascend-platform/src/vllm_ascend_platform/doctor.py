# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``vllm-ascend doctor``: what would run, with which versions, and what is wrong.

Reports the mode (npu, simulated-npu, emulation, inactive), device(s), the versions of vLLM,
torch, torch_npu and CANN, the SoC name, every layer against the meta-package's
ranges (layer-skew check), the plugin entry points vLLM would load given
``VLLM_PLUGINS`` and why, every declared patch (scope, vLLM range, state) and the kernel
backend of each ``ascend_ops`` op family with the reason (a missing ``ascend_ops._C`` in CPU
emulation is a problem naming its import failure and the fix). In emulation (and simulated NPU) the device
memory is parsed as the engine parses it (a value the engine refuses is a problem); a
set ``VLLM_ASCEND_*`` variable the plugin does not read is a note naming the closest
known one. Exit code 1 when anything is incompatible, else 0.

It must run where vLLM is missing or broken, so vLLM, torch and torch_npu are
only imported inside probes that report their own failure (no module-level
import of any of them).
"""

from __future__ import annotations

import argparse
import difflib
import glob
import importlib.metadata
import importlib.util
import json
import os
from typing import Any

from vllm_ascend_platform import envs
from vllm_ascend_platform.startup import layer_dists, version_check
from vllm_ascend_platform.startup.plugin import GENERAL_GROUP, LAYERS_ENTRY, PLATFORM_ENTRY, PLATFORM_GROUP


def _flag(name: str) -> tuple[bool, str | None]:
    value = os.environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False, None
    if value in ("1", "true", "yes", "on"):
        return True, None
    return False, f"{name}={value!r} is not a boolean; set it to 1 or unset it"


def _has_simulator() -> bool:
    try:  # finding a submodule imports its package (ascend_ops, torch): report, do not raise
        return importlib.util.find_spec("ascend_ops.simulator") is not None
    except Exception:
        return False


def _requested_mode(problems: list[str]) -> str | None:
    """``"emulation"`` / ``"simulated-npu"`` as the flags ask (the engine's rule,
    ``envs.requested_mode``), else None; flag problems are appended to ``problems``."""
    emulate, problem = _flag("VLLM_ASCEND_EMULATE")
    simulate, sim_problem = _flag("VLLM_ASCEND_SIMULATE_NPU")
    problems.extend(p for p in (problem, sim_problem) if p)
    if emulate and simulate:
        problems.append("VLLM_ASCEND_EMULATE=1 and VLLM_ASCEND_SIMULATE_NPU=1 are both set; "
                        "they are different modes, unset one of them")
        return "refused"
    if emulate:
        return "emulation"
    if simulate:
        if not _has_simulator():
            problems.append("VLLM_ASCEND_SIMULATE_NPU=1 but ascend_ops.simulator is not "
                            "installed; install ascend-ops from this checkout")
        else:
            problems.extend(_simulator_problems())
        return "simulated-npu"
    return None


def _simulator_problems() -> list[str]:
    """What keeps the simulated NPU from starting: its operator schemas come from the torch-npu
    wheel in the cache (docs/simulated-npu.md), fetched by scripts/bootstrap.sh."""
    try:
        from ascend_ops.simulator import schemas

        if schemas.find_wheel() is None:
            return ["VLLM_ASCEND_SIMULATE_NPU=1 but the torch-npu wheel (the simulator's operator "
                    f"schemas) is not in {schemas.cache_dir()}; fetch it with: "
                    "python -m ascend_ops.simulator.schemas --fetch"]
    except Exception as exc:  # report, never raise from doctor
        return [f"the simulated NPU cannot load its schemas: {type(exc).__name__}: {exc}"]
    return []


def _cann_version() -> str | None:
    """CANN toolkit version from its install info file, when a toolkit is present."""
    roots = [os.environ.get(v) for v in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")]
    roots += ["/usr/local/Ascend/ascend-toolkit/latest"]
    for root in filter(None, roots):
        for info in sorted(glob.glob(os.path.join(root, "*", "ascend_toolkit_install.info"))) + [
            os.path.join(root, "version.cfg")
        ]:
            try:
                with open(info, encoding="utf-8") as fh:
                    for line in fh:
                        key, _, value = line.strip().partition("=")
                        if key.strip() in ("version", "Version", "toolkit_installed_version"):
                            return value.strip().strip("[]:")
            except OSError:
                continue
    return None


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect() -> dict[str, Any]:
    """Gather the report as a JSON-able dict; ``problems`` lists what is incompatible."""
    problems: list[str] = []
    notes: list[str] = []
    report: dict[str, Any] = {"problems": problems, "notes": notes}

    requested = _requested_mode(problems)
    has_npu = importlib.util.find_spec("torch_npu") is not None
    mode = requested or ("npu" if has_npu else "inactive")
    report["mode"] = mode
    if mode == "inactive":
        notes.append("torch_npu is not installed and VLLM_ASCEND_EMULATE is not set: the plugin "
                     "stays inactive; set VLLM_ASCEND_EMULATE=1 for CPU emulation")

    versions: dict[str, str | None] = {}
    report["versions"] = versions
    vllm_version = None
    try:
        vllm_version = version_check.installed_vllm_version()
    except Exception as exc:
        problems.append(f"vLLM is installed but fails to import: {type(exc).__name__}: {exc}")
    versions["vllm"] = vllm_version
    # the model runner the worker builds for this vLLM (Model Runner V2; none outside the range)
    report["runner"] = version_check.runner_label(vllm_version) if vllm_version else None
    if vllm_version is None and not any("fails to import" in p for p in problems):
        problems.append(f"vLLM is not installed: {version_check.install_hint(version_check.PLATFORM_VLLM)}")
    elif vllm_version is not None and not version_check.is_supported_vllm(vllm_version):
        problem = version_check.vllm_version_problem(vllm_version)
        if problem:
            (notes if version_check.skip_requested() else problems).append(problem)
    versions["torch"] = _dist_version("torch")
    if versions["torch"] is None:
        problems.append("torch is not installed")
    versions["torch_npu"] = _dist_version("torch-npu") or _dist_version("torch_npu")
    versions["cann"] = _cann_version()

    devices: list[str] = []
    report["devices"], report["soc"] = devices, None
    if mode in ("emulation", "simulated-npu"):
        raw = os.environ.get("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "").strip()
        try:  # the engine parses it the same way at start-up and refuses what fails here
            memory = envs.emulated_device_memory()
        except ValueError as exc:
            problems.append(str(exc))
        else:
            where = f"VLLM_ASCEND_EMULATE_DEVICE_MEMORY={raw}" if raw else "default"
            what = "simulated NPU (ascend_ops.simulator)" if mode == "simulated-npu" else \
                "emulated NPU"
            devices.append(f"{what} on cpu, device memory {memory / (1 << 30):.3f} GiB "
                           f"({where})")
    elif mode == "npu":
        try:
            from ascend_ops import device

            device.load_npu_runtime()  # the one place torch_npu is imported (ascend_ops)
            count = device.device_count() if device.kind() == "npu" else 0
            devices.extend(f"npu:{i} {device.get_device_name(i)}" for i in range(count))
            report["soc"] = device.get_device_name(0) if count else None
            if count == 0:
                problems.append("torch_npu imports but no NPU is visible (check npu-smi info, "
                                "ASCEND_RT_VISIBLE_DEVICES)")
        except Exception as exc:
            problems.append(f"torch_npu is installed but fails to import: {type(exc).__name__}: "
                            f"{exc}; source CANN's set_env.sh")

    layers = []
    for status in version_check.layer_statuses():
        layers.append({"layer": status.layer.key, "dist": status.layer.dist,
                       "version": status.version, "required": status.required, "ok": status.ok})
        if status.problem:
            problems.append(status.problem)
    report["layers"] = layers
    if _dist_version(layer_dists.META_DIST) is None:
        problems.append(f"the meta-package {layer_dists.META_DIST} is not installed, so vLLM "
                        "finds no Ascend entry points; install it from the checkout (pip install .)")

    notes.extend(_unknown_ascend_variables())
    report["plugins"] = _plugins(mode, problems)
    try:  # patch modules import vLLM, which resolves the platform (our plugin may exit)
        report["patches"] = _patches(vllm_version)
    except (Exception, SystemExit) as exc:
        report["patches"] = []
        problems.append(f"the patch registry could not be read: {exc}")
    for patch in report["patches"]:  # startup_check refuses to start with a drifted patch
        if patch["state"] == "drifted":
            problems.append(f"patch {patch['name']} ({patch['target']}) drifted: {patch['reason']}")
    report["kernels"] = _kernels(mode, problems)
    report["ok"] = not problems
    return report


def _unknown_ascend_variables() -> list[str]:
    """A note for each set ``VLLM_ASCEND_*`` variable the plugin does not read (a typo is
    otherwise silent: vLLM only logs a warning at start-up), naming the closest known one."""
    known = list(envs.ENVIRONMENT_VARIABLES)
    notes = []
    for name in sorted(os.environ):
        if name.startswith("VLLM_ASCEND_") and name not in envs.ENVIRONMENT_VARIABLES:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(known)}"
            notes.append(f"{name} is not a vllm-ascend variable and is ignored{hint}")
    return notes


def _plugins(mode: str, problems: list[str]) -> dict[str, Any]:
    from vllm_ascend_platform.startup.plugin import _selection_problems, plugin_selection

    sel = plugin_selection()
    platform_loads = PLATFORM_ENTRY in sel.loaded.get(PLATFORM_GROUP, [])
    layers_load = LAYERS_ENTRY in sel.loaded.get(GENERAL_GROUP, [])
    if sel.env is None:
        why = "VLLM_PLUGINS is unset: vLLM loads every discovered plugin"
    elif sel.env == "":
        why = ("VLLM_PLUGINS is the empty string: vLLM loads no plugin at all, so the Ascend "
               "platform (and emulation) cannot run")
    else:
        why = f"VLLM_PLUGINS={sel.env!r}: vLLM loads only the named plugins"
    if mode != "inactive":
        if not platform_loads:
            problems.append(f"{why}; the platform plugin {PLATFORM_ENTRY!r} will not load: unset "
                            f"VLLM_PLUGINS or set VLLM_PLUGINS={PLATFORM_ENTRY},{LAYERS_ENTRY}")
        elif not layers_load:
            problems.append(f"the general plugin {LAYERS_ENTRY!r} will not load ({why}), so the "
                            f"layers are not registered: set VLLM_PLUGINS={PLATFORM_ENTRY},{LAYERS_ENTRY}")
        problems.extend(_selection_problems(sel))
    return {"VLLM_PLUGINS": sel.env, "why": why,
            "discovered": {g: [f"{n} -> {v}" for n, v in eps] for g, eps in sel.discovered.items()},
            "would_load": sel.loaded}


def _patches(vllm_version: str | None) -> list[dict[str, str]]:
    from vllm_ascend_platform.patches import registry as patches

    return [{"name": s.patch.name, "target": s.patch.target, "state": s.state, "reason": s.reason,
             "scope": s.patch.scope, "vllm_versions": s.patch.vllm_versions, "why": s.patch.why}
            for s in patches.patch_statuses(vllm_version)]


def _kernels(mode: str, problems: list[str]) -> list[dict[str, str | None]]:
    """Backend per ascend_ops op family in ``mode`` (the engine refuses to start on a problem)."""
    if mode not in ("npu", "emulation", "simulated-npu"):
        return []
    from vllm_ascend_platform.host import kernel_report

    requested = None if mode == "npu" else mode
    try:
        problems.extend(kernel_report.problems(requested))
        return [{"family": fb.family, "backend": fb.backend, "reason": fb.reason}
                for fb in kernel_report.families(requested)]
    except ValueError as exc:  # ASCEND_OPS_BACKEND names no backend
        problems.append(f"ASCEND_OPS_BACKEND: {exc}")
    except ImportError as exc:  # ascend_ops or torch missing: no kernel can run
        problems.append(f"the kernels cannot be listed: {type(exc).__name__}: {exc}")
    return []


def render(report: dict[str, Any]) -> str:
    """The human-readable report."""
    v = report["versions"]
    lines = [
        "vllm-ascend doctor",
        f"mode:      {report['mode']}",
        f"devices:   {', '.join(report['devices']) or 'none'}",
        f"soc:       {report['soc'] or 'n/a'}",
        "versions:  " + ", ".join(f"{k} {v[k] or 'not installed'}" for k in ("vllm", "torch", "torch_npu"))
        + f", CANN {v['cann'] or 'not found'}",
        f"runner:    {report.get('runner') or 'n/a (no vLLM)'}",
        "layers:",
    ]
    for layer in report["layers"]:
        state = "ok" if layer["ok"] else "MISMATCH"
        if layer["version"] is None:
            state = "not installed"
        lines.append(f"  {layer['dist']:<24} {layer['version'] or '-':<10} "
                     f"needs {layer['required'] or 'any'}: {state}")
    plugins = report["plugins"]
    lines.append(f"plugins:   {plugins['why']}")
    for group, eps in plugins["discovered"].items():
        loads = plugins["would_load"].get(group, [])
        for ep in eps:
            name = ep.split(" -> ")[0]
            lines.append(f"  {group}: {ep} [{'loads' if name in loads else 'skipped'}]")
    lines.append("patches:   " + ("none (or the registry could not be read: see problems)"
                                  if not report["patches"] else f"{len(report['patches'])} declared"))
    for p in report["patches"]:
        lines.append(f"  {p['name']} ({p['target']}, {p['scope']}, vLLM {p['vllm_versions']}): "
                     f"{p['state']} ({p['reason']})")
    lines.append("kernels:" + ("   none (no Ascend mode)" if not report["kernels"] else ""))
    for k in report["kernels"]:
        lines.append(f"  {k['family']:<12} {k['backend'] or 'UNAVAILABLE':<10} {k['reason']}")
    for note in report["notes"]:
        lines.append(f"note:      {note}")
    for problem in report["problems"]:
        lines.append(f"PROBLEM:   {problem}")
    lines.append("result:    " + ("OK" if report["ok"] else "INCOMPATIBLE"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the report; return 1 when something is incompatible, else 0."""
    parser = argparse.ArgumentParser(prog="vllm-ascend doctor", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = collect()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0 if report["ok"] else 1
