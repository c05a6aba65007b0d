# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Operator schemas published by the torch-npu 2.13.0 wheel (read from the wheel, never installed).

* ``wheel_path()`` finds the wheel in the cache folder ``$ASCEND_OPS_TORCH_NPU_CACHE`` (default
  ``~/.cache/vllm-ascend/torch_npu``); a missing wheel raises ``SimulatedNpuError`` with the
  command that fetches it (``fetch()``: ``pip download --no-deps``). Installing the wheel is never
  wanted: importing the real torch_npu without CANN breaks ``import torch``.
* ``published_schemas()`` reads ``torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml`` (key
  ``custom``: every overload, e.g. ``npu_fused_infer_attention_score`` and its ``.out``) and the
  ATB ``_npu_*`` C++ prototypes of ``op_plugin/include/AtbOpsInterface.h``. The result is cached
  as JSON next to the wheel, so later processes skip the 100+ MB zip.

``python -m ascend_ops.simulator.schemas --fetch`` downloads the wheel into the cache (used by
``scripts/bootstrap.sh``); ``--check`` only verifies it is there.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ascend_ops.simulator.errors import SimulatedNpuError

TORCH_NPU_VERSION = "2.13.0"
YAML_PATH = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
ATB_HEADER = "op_plugin/include/AtbOpsInterface.h"
HCCL_HEADER_DIR = "torch_npu/include/third_party/hccl/inc/hccl/"
_CACHE_FORMAT = 2  # bump when the JSON layout changes


def cache_dir() -> Path:
    """Folder holding the torch-npu wheel: ``$ASCEND_OPS_TORCH_NPU_CACHE`` or
    ``~/.cache/vllm-ascend/torch_npu``."""
    default = Path.home() / ".cache" / "vllm-ascend" / "torch_npu"
    return Path(os.environ.get("ASCEND_OPS_TORCH_NPU_CACHE") or default)


def fetch_command(dest: Path | None = None) -> list[str]:
    """The pip command that downloads (never installs) the wheel into ``dest``."""
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        f"torch-npu=={TORCH_NPU_VERSION}", "--python-version", "3.11",
        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
        "--platform", "manylinux_2_17_x86_64", "-d", str(dest or cache_dir()),
    ]


def _fetch_hint() -> str:
    return (f"fetch it with `python -m ascend_ops.simulator.schemas --fetch` (runs: "
            f"{' '.join(['python', *fetch_command()[1:]])}), or run `bash scripts/bootstrap.sh`")


def find_wheel() -> Path | None:
    """The cached wheel's path, or None."""
    pattern = str(cache_dir() / f"torch_npu-{TORCH_NPU_VERSION}-cp311-cp311-*x86_64.whl")
    found = sorted(glob.glob(pattern))
    return Path(found[0]) if found else None


def wheel_path() -> Path:
    """The cached wheel's path; ``SimulatedNpuError`` naming the fetch command when missing."""
    wheel = find_wheel()
    if wheel is None:
        raise SimulatedNpuError(
            f"torch-npu {TORCH_NPU_VERSION} wheel not found in {cache_dir()} "
            f"(set ASCEND_OPS_TORCH_NPU_CACHE to use another folder); {_fetch_hint()}"
        )
    return wheel


def fetch(timeout: float = 900) -> Path:
    """Download the wheel into ``cache_dir()`` unless already there; returns its path.

    Raises ``SimulatedNpuError`` with pip's last output line when the download fails.
    """
    wheel = find_wheel()
    if wheel is not None:
        return wheel
    cache_dir().mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(fetch_command(), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SimulatedNpuError(f"pip download torch-npu=={TORCH_NPU_VERSION} failed: {exc}") from exc
    wheel = find_wheel()
    if wheel is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SimulatedNpuError(f"pip download torch-npu=={TORCH_NPU_VERSION} got no wheel: {tail[0]}")
    return wheel


_CPP_TYPES = [
    (r"const\s+c10::optional<at::Tensor>\s*&", "Tensor?"),
    (r"c10::optional<c10::string_view>", "str?"),
    (r"c10::OptionalArrayRef<c10::SymInt>", "SymInt[]?"),
    (r"c10::SymIntArrayRef", "SymInt[]"),
    (r"at::IntArrayRef", "int[]"),
    (r"const\s+at::Tensor\s*&", "Tensor"),
    (r"at::Tensor\s*&", "Tensor(!)"),
    (r"(const\s+)?int64_t", "int"),
    (r"(const\s+)?double", "float"),
    (r"(const\s+)?bool", "bool"),
]


def atb_prototype_to_schema(line: str) -> str | None:
    """Turn one ``TORCH_NPU_API void _npu_x(const at::Tensor&a, ...);`` line into a schema.

    Only ``void`` prototypes (in-place ATB kernels writing their ``at::Tensor&`` arguments) are
    converted; anything else returns None.
    """
    m = re.match(r"\s*TORCH_NPU_API\s+(.+?)\s*(\b_npu_\w+)\((.*)\);", line)
    if not m:
        return None
    ret, name, params = m.groups()
    if ret.strip() != "void":
        return None
    args, alias = [], iter("abcdefgh")
    for raw in params.split(","):
        raw = raw.strip()
        pm = re.match(r"(.*?)\s*&?\s*(\w+)$", raw.replace("& ", "&"))
        if not pm:
            return None
        ctype, pname = raw[: raw.rfind(pm.group(2))], pm.group(2)
        for pat, schema_type in _CPP_TYPES:
            if re.fullmatch(pat, ctype.strip()):
                if schema_type == "Tensor(!)":
                    schema_type = f"Tensor({next(alias)}!)"
                args.append(f"{schema_type} {pname}")
                break
        else:
            return None
    return f"{name}({', '.join(args)}) -> ()"


@dataclass(frozen=True)
class Schemas:
    """``custom``: {op name: [schema, ...]} (default overload first, then e.g. ``name.out``) from
    the yaml; ``atb``: {ATB op name: schema} from the header; ``wheel``: the file they came from."""

    custom: dict[str, list[str]]
    atb: dict[str, str]
    wheel: str

    def overloads(self, name: str) -> list[str]:
        """All schemas of ``name`` (``npu`` namespace first, else the ATB one); [] if unknown."""
        if name in self.custom:
            return self.custom[name]
        return [self.atb[name]] if name in self.atb else []

    def namespace(self, name: str) -> str:
        return "npu" if name in self.custom else "atb"


def _parse_wheel(wheel: Path) -> Schemas:
    try:
        import yaml
    except ImportError as exc:
        raise SimulatedNpuError("reading the torch-npu wheel's schemas needs PyYAML: pip install pyyaml") from exc

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with zipfile.ZipFile(wheel) as z:
        data = yaml.load(z.read(YAML_PATH), Loader=loader)
        header = next(n for n in z.namelist() if n.endswith(ATB_HEADER) and n.startswith("torch_npu/"))
        atb_text = z.read(header).decode()
    custom: dict[str, list[str]] = {}
    for entry in data["custom"]:
        func = entry["func"]
        base = func.split("(", 1)[0].split(".", 1)[0]
        custom.setdefault(base, []).append(func)
    for funcs in custom.values():  # default overload (no ".name") first
        funcs.sort(key=lambda f: "." in f.split("(", 1)[0])
    atb = {}
    for line in atb_text.splitlines():
        schema = atb_prototype_to_schema(line)
        if schema:
            atb[schema.split("(", 1)[0]] = schema
    return Schemas(custom, atb, str(wheel))


_memo: Schemas | None = None


def published_schemas() -> Schemas:
    """The wheel's schemas (parsed once; cached as JSON beside the wheel, keyed by its size and
    mtime). Raises ``SimulatedNpuError`` when the wheel is missing."""
    global _memo
    if _memo is not None:
        return _memo
    wheel = wheel_path()
    st = wheel.stat()
    key = f"{_CACHE_FORMAT}-{st.st_size}-{int(st.st_mtime)}"
    cached = wheel.with_name(wheel.name + ".schemas.json")
    try:
        data = json.loads(cached.read_text())
        if data.get("key") == key:
            _memo = Schemas(data["custom"], data["atb"], str(wheel))
            return _memo
    except (OSError, ValueError):
        pass
    _memo = _parse_wheel(wheel)
    try:
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "custom": _memo.custom, "atb": _memo.atb}))
        os.replace(tmp, cached)
    except OSError:
        pass  # a read-only cache only costs a re-parse next time
    return _memo


def read_member(path_in_wheel: str) -> bytes:
    """Bytes of one file of the wheel (e.g. the HCCL headers under ``HCCL_HEADER_DIR``)."""
    with zipfile.ZipFile(wheel_path()) as z:
        return z.read(path_in_wheel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ascend_ops.simulator.schemas", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--fetch", action="store_true", help="download the wheel into the cache if missing")
    group.add_argument("--check", action="store_true", help="exit 1 when the wheel is not cached")
    args = parser.parse_args(argv)
    try:
        wheel = fetch() if args.fetch else wheel_path()
        schemas = published_schemas()
    except SimulatedNpuError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{wheel} ({len(schemas.custom)} npu operators, {len(schemas.atb)} ATB operators)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
