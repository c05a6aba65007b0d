# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""msModelSlim W8A8 / W8A8_DYNAMIC checkpoints of SmolLM2-135M-Instruct for the e2e tests.

Made by msModelSlim itself (PyPI ``msmodelslim``, CPU) from the demo checkpoint, once, then cached
under ``${VLLM_ASCEND_CACHE:-~/.cache/vllm-ascend}/quantized/<name>``. The quantization configs
follow msModelSlim's ``modelslim_v1`` format (its ``lab_practice/*/*.yaml``): one ``linear_quant``
step, int8 per-channel symmetric min-max weights; activations per token symmetric
(W8A8_DYNAMIC, every linear) or per tensor asymmetric (W8A8 static; ``down_proj`` left in float as
Huawei's own W8A8 recipes do, its activation outliers make static int8 inaccurate); ``lm_head``
excluded; ``ascendv1_saver`` with ``part_file_size`` > 0 (0 fails on SmolLM2's tied embeddings).
Calibration data: the first :data:`CALIB_SAMPLES` texts of msModelSlim's own default set
(``lab_calib/mix_calib.jsonl``, named by ``spec.dataset``), not all 48: msModelSlim runs every
sample through every layer, which on 2 cores took 4.5 min for the static W8A8 recipe with all 48.

msModelSlim is found as an importable ``msmodelslim`` or under ``$MSMODELSLIM_SITE`` (a
``pip install --target`` folder, e.g. ``pip install --target ~/.cache/vllm-ascend/msmodelslim
msmodelslim easydict wcmatch pygtrie --no-deps``); without it the tests skip, or fail under CI.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_COMMON = """apiversion: modelslim_v1
metadata:
  config_id: {name}
  score: 50
  verified_model_types: []
  label: {{w_bit: 8, a_bit: 8, is_sparse: False, kv_cache: False}}
spec:
  process:
    - type: "linear_quant"
      qconfig:
        act: {act}
        weight: {{scope: "per_channel", dtype: "int8", symmetric: True, method: "minmax"}}
      include: ["*"]
      exclude: {exclude}
  save:
    - type: "ascendv1_saver"
      part_file_size: 4
  dataset: "{{dataset}}"
"""

CONFIGS = {
    "w8a8-dynamic": _COMMON.format(
        name="smollm2-w8a8-dynamic", exclude='["lm_head"]',
        act='{scope: "per_token", dtype: "int8", symmetric: True, method: "minmax"}'),
    "w8a8": _COMMON.format(
        name="smollm2-w8a8", exclude='["lm_head", "*.down_proj"]',
        act='{scope: "per_tensor", dtype: "int8", symmetric: False, method: "minmax"}'),
}
#: bump to rebuild cached checkpoints when the recipe changes
RECIPE_VERSION = "2"
#: calibration texts taken from the head of msModelSlim's ``mix_calib.jsonl``
CALIB_SAMPLES = 8


def _site() -> str | None:
    if importlib.util.find_spec("msmodelslim") is not None:
        return ""
    from vllm_ascend import demo_model

    for cand in (os.environ.get("MSMODELSLIM_SITE"), demo_model.cache_root() / "msmodelslim"):
        if cand and (Path(cand) / "msmodelslim").is_dir():
            return str(cand)
    return None


def _calibration_set(site: str, out: Path) -> Path:
    """The first :data:`CALIB_SAMPLES` lines of msModelSlim's ``lab_calib/mix_calib.jsonl``
    (msModelSlim's default calibration set), written to ``out``."""
    if site:
        root = Path(site) / "msmodelslim"
    else:
        root = Path(importlib.util.find_spec("msmodelslim").origin).parent
    lines = (root / "lab_calib" / "mix_calib.jsonl").read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(lines[:CALIB_SAMPLES]) + "\n", encoding="utf-8")
    return out


def quantized(kind: str, source: str | None = None, name: str = "SmolLM2-135M-Instruct") -> str:
    """Path of the cached msModelSlim checkpoint ``kind`` ("w8a8" or "w8a8-dynamic") of
    ``source`` (default: the SmolLM2 demo checkpoint) cached as ``name``, made now when absent
    (SmolLM2 on 2 cores: about 1 min for W8A8_DYNAMIC, 1.5 min for the calibrated W8A8)."""
    from vllm_ascend import demo_model

    out = demo_model.cache_root() / "quantized" / f"{name}-{kind}-r{RECIPE_VERSION}"
    if (out / "quant_model_description.json").exists():
        return str(out)
    site = _site()
    if site is None:
        msg = ("msmodelslim is not installed: pip install --target ~/.cache/vllm-ascend/msmodelslim "
               "--no-deps msmodelslim easydict wcmatch pygtrie bracex (or set MSMODELSLIM_SITE)")
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    src = source or demo_model.prepare()
    out.parent.mkdir(parents=True, exist_ok=True)
    # e2e parts run at once (noxfile.py): the first to ask makes it, the others wait, then read it
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "quant_model_description.json").exists():
            _make(out, kind, str(src), name, site)
    return str(out)


def _make(out: Path, kind: str, src: str, name: str, site: str) -> None:
    """Run msModelSlim for checkpoint ``kind`` of ``src`` into ``out`` (via ``out.partial``)."""
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cfg = work.parent / f"{name}-{kind}.yaml"
    calib = _calibration_set(site, work.parent / f"{name}-{kind}-calib.jsonl")
    cfg.write_text(CONFIGS[kind].replace("{dataset}", str(calib)))
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_WAIT_POLICY="PASSIVE")
    if site:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-c", "import sys; from msmodelslim.cli.__main__ import main; "
           "sys.argv[0] = 'msmodelslim'; sys.exit(main())",
           "quant", "--model_path", str(src), "--save_path", str(work), "--device", "cpu",
           "--model_type", "default", "--config_path", str(cfg)]
    log = work.parent / f"{name}-{kind}.log"
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=3600).returncode
    if rc != 0 or not (work / "quant_model_description.json").exists():
        raise AssertionError(f"msmodelslim failed (rc={rc}); log tail:\n{log.read_text()[-4000:]}")
    work.rename(out)
