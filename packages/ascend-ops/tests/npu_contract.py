"""A schema-checking fake ``torch_npu`` built from the torch-npu wheel's own published schemas.

* ``find_or_download_wheel`` fetches the torch-npu wheel with ``pip download --no-deps`` into a
  cache (never installs it: importing torch_npu without CANN breaks ``import torch``).
* ``published_schemas`` reads ``torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml`` (key
  ``custom``) and the ATB ``_npu_*`` C++ prototypes from ``op_plugin/include/AtbOpsInterface.h``.
* ``FakeTorchNpu`` defines those schemas in torch.library namespaces ``npu`` / ``atb`` with kernels
  computing the published semantics via ``ascend_ops.reference``. Calls go through the torch
  dispatcher, so an unknown keyword, a missing required argument or a wrong type raises.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import torch

TORCH_NPU_VERSION = "2.13.0"
YAML_PATH = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
ATB_HEADER = "op_plugin/include/AtbOpsInterface.h"


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "vllm-ascend" / "torch_npu"
    return Path(os.environ.get("ASCEND_OPS_TORCH_NPU_CACHE", default))


def find_or_download_wheel() -> tuple[Path | None, str]:
    """(wheel path, "") or (None, reason it could not be obtained)."""
    d = cache_dir()
    pattern = str(d / f"torch_npu-{TORCH_NPU_VERSION}-cp311-cp311-*x86_64.whl")
    found = sorted(glob.glob(pattern))
    if found:
        return Path(found[0]), ""
    d.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        f"torch-npu=={TORCH_NPU_VERSION}", "--python-version", "3.11",
        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
        "--platform", "manylinux_2_17_x86_64", "-d", str(d),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"pip download torch-npu=={TORCH_NPU_VERSION} failed: {exc}"
    found = sorted(glob.glob(pattern))
    if not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"pip download torch-npu=={TORCH_NPU_VERSION} got no wheel: {tail[0]}"
    return Path(found[0]), ""


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
    """Turn one ``TORCH_NPU_API void _npu_x(const at::Tensor&a, ...);`` line into a schema."""
    m = re.match(r"\s*TORCH_NPU_API\s+(.+?)\s*(\b_npu_\w+)\((.*)\);", line)
    if not m:
        return None
    ret, name, params = m.groups()
    if ret.strip() != "void":
        return None  # only in-place ATB kernels are mapped; others are not used by ascend_ops
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


def published_schemas(wheel: Path) -> tuple[dict[str, str], dict[str, str]]:
    """({op name: schema} from the yaml ``custom`` key, {ATB op name: schema} from the header)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with zipfile.ZipFile(wheel) as z:
        data = yaml.load(z.read(YAML_PATH), Loader=loader)
        header = next(n for n in z.namelist() if n.endswith(ATB_HEADER) and n.startswith("torch_npu/"))
        atb_text = z.read(header).decode()
    custom = {}
    for entry in data["custom"]:
        func = entry["func"]
        name = func.split("(", 1)[0]
        custom.setdefault(name, func)  # first (default) overload
    atb = {}
    for line in atb_text.splitlines():
        schema = atb_prototype_to_schema(line)
        if schema:
            atb[schema.split("(", 1)[0]] = schema
    return custom, atb


def bind(schema: torch._C.FunctionSchema, args, kwargs) -> dict:
    """Map the dispatcher's (args, kwargs) onto argument names, filling defaults."""
    out, pos = {}, list(args)
    for a in schema.arguments:
        if a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif pos and not a.kwarg_only:
            out[a.name] = pos.pop(0)
        else:
            out[a.name] = a.default_value
    return out


class FakeTorchNpu:
    """Defines published schemas in torch.library and exposes them as a fake torch_npu module."""

    _libs: dict[str, torch.library.Library] = {}
    _defined: set[str] = set()

    def __init__(self, custom: dict[str, str], atb: dict[str, str], kernels: dict):
        self.custom, self.atb, self.kernels = custom, atb, kernels
        self.calls: list[tuple[str, dict]] = []
        self.module = types.ModuleType("torch_npu")
        self.module.__fake__ = True
        # default overloads first, then ``name.overload`` ones (e.g. ``.out``), reached as
        # ``torch_npu.<name>.<overload>`` like the real module's op packets
        for name, kernel in sorted(kernels.items(), key=lambda kv: "." in kv[0]):
            ns, schema_text = ("npu", custom[name]) if name in custom else ("atb", atb[name])
            self._define(ns, name, schema_text, kernel)
            base, _, overload = name.partition(".")
            packet = getattr(getattr(torch.ops, ns), base)
            if overload:
                setattr(getattr(self.module, base), overload,
                        self._recorder(name, getattr(packet, overload)))
            else:
                setattr(self.module, name, self._recorder(name, packet))

    def _define(self, ns, name, schema_text, kernel):
        key = f"{ns}::{name}"
        if key in self._defined:
            return
        lib = self._libs.setdefault(ns, torch.library.Library(ns, "FRAGMENT"))
        lib.define(schema_text)
        schema = torch._C.parse_schema(schema_text)

        def impl(*args, **kwargs):
            return kernel(**bind(schema, args, kwargs))

        lib.impl(name, impl, "CompositeExplicitAutograd")
        self._defined.add(key)

    def _recorder(self, name, op):
        def call(*args, **kwargs):
            self.calls.append((name, dict(kwargs)))
            return op(*args, **kwargs)

        call.__name__ = name
        return call

    def called(self) -> set[str]:
        return {name for name, _ in self.calls}
