# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The simulated ``torch_npu`` module: published schemas defined in ``torch.library``.

Every operator with a simulator kernel is defined in namespace ``npu`` (yaml ``custom`` ops, all
overloads, e.g. ``npu_fused_infer_attention_score`` and ``.out``) or ``atb`` (``_npu_*`` ATB ops)
from the schema text the torch-npu wheel publishes, with one ``CompositeExplicitAutograd`` kernel
per overload that: refuses an operator the simulated SoC lacks (``soc``), counts the launch in
the ledger, checks ``constraints``, runs the reference kernel. Calls therefore go through the
torch dispatcher: an unknown keyword, a missing argument or a wrong type raises there, exactly as for the real operator.

``torch_npu.<op>`` is an ``Operator`` (records the caller's line for ``call_sites()``, then calls
``torch.ops.<ns>.<op>``); ``torch_npu.<op>.<overload>`` gives that overload, which also accepts
torch_npu's ``out=[...]`` spelling for the overload's output arguments (the only spelling
when there are several: torch_npu registers them as one ``Tensor[] out``). A published operator
without a simulator kernel raises AttributeError naming it (so ``hasattr`` feature checks work).
"""

from __future__ import annotations

import importlib.machinery
import threading
import types
from typing import Any

import torch

from ascend_ops.simulator import constraints, soc
from ascend_ops.simulator.errors import SimulatedNpuError
from ascend_ops.simulator.kernels import KERNELS
from ascend_ops.simulator.kernels_attention import ATTENTION_KERNELS
from ascend_ops.simulator.kernels_lora import LORA_KERNELS
from ascend_ops.simulator.kernels_moe import MOE_KERNELS
from ascend_ops.simulator.kernels_quant import QUANT_KERNELS
from ascend_ops.simulator.kernels_rope import ROPE_KERNELS, reset_atb_rope_tables
from ascend_ops.simulator.kernels_sparse import SPARSE_KERNELS
from ascend_ops.simulator.ledger import LEDGER, record_call
from ascend_ops.simulator.schemas import TORCH_NPU_VERSION, Schemas

ALL_KERNELS = {**KERNELS, **ATTENTION_KERNELS, **MOE_KERNELS, **LORA_KERNELS, **QUANT_KERNELS,
               **ROPE_KERNELS, **SPARSE_KERNELS}
_libs: dict[str, torch.library.Library] = {}
_defined: set[str] = set()
_lock = threading.Lock()


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


def _kernel_for(name: str, overload: str):
    return ALL_KERNELS.get(f"{name}.{overload}") or ALL_KERNELS.get(name)


def _define_one(ns: str, schema_text: str, kernel, base: str) -> None:
    full = schema_text.split("(", 1)[0]
    key = f"{ns}::{full}"
    if key in _defined:
        return
    lib = _libs.setdefault(ns, torch.library.Library(ns, "FRAGMENT"))
    lib.define(schema_text)
    schema = torch._C.parse_schema(schema_text)

    def impl(*args, **kwargs):
        bound = bind(schema, args, kwargs)
        soc.require(base)  # per-product availability (sources in simulator/soc.py)
        LEDGER.launch(base)
        constraints.check(base, bound)
        try:
            return kernel(**bound)
        except NotImplementedError as exc:
            raise SimulatedNpuError(f"{base}: not modelled by the simulator: {exc}") from exc

    lib.impl(full, impl, "CompositeExplicitAutograd")
    _defined.add(key)


def define_all(schemas: Schemas) -> list[str]:
    """Define every operator that has a kernel (all published overloads); returns their names."""
    names = []
    with _lock:
        for key in ALL_KERNELS:
            base = key.split(".", 1)[0]
            if base in names:
                continue
            overloads = schemas.overloads(base)
            if not overloads:
                raise SimulatedNpuError(f"{base}: kernel present but the wheel publishes no schema for it")
            ns = schemas.namespace(base)
            for text in overloads:
                full = text.split("(", 1)[0]
                overload = full.split(".", 1)[1] if "." in full else "default"
                kernel = _kernel_for(base, overload)
                if kernel is not None:
                    _define_one(ns, text, kernel, base)
            names.append(base)
    return names


def _out_names(op) -> list[str]:
    return [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write
            and a.kwarg_only]


class Overload:
    """One overload (``torch_npu.<op>.<overload>``); ``out=[t, ...]`` maps onto its write args."""

    __slots__ = ("_op", "_outs", "__name__")

    def __init__(self, op, name: str):
        self._op = op
        self._outs = _out_names(op)
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        record_call(2)
        if len(self._outs) > 1 and set(self._outs) & set(kwargs):
            # torch_npu registers an overload with several out arguments with them replaced by
            # one ``Tensor[] out`` (Ascend/pytorch torchnpugen/custom_functions.py@9e73e70,
            # RegisterCustomSchema; the 2.13.0 wheel's libtorch_npu.so holds that schema), so
            # only out=[...] reaches them: their yaml names are unknown keywords there
            raise TypeError(f"{self.__name__}() got unexpected keyword(s) "
                            f"{sorted(set(self._outs) & set(kwargs))}: pass out={self._outs}")
        if "out" in kwargs and self._outs and "out" not in self._outs:
            outs = kwargs.pop("out")
            outs = [outs] if isinstance(outs, torch.Tensor) else list(outs)
            if len(outs) != len(self._outs):
                raise TypeError(f"{self.__name__}: out= needs {len(self._outs)} tensors ({self._outs})")
            kwargs.update(zip(self._outs, outs, strict=True))
        return self._op(*args, **kwargs)

    @property
    def op(self):
        """The ``torch.ops`` OpOverload behind this attribute."""
        return self._op


class Operator:
    """``torch_npu.<op>``: calls the operator (overload chosen by the dispatcher)."""

    __slots__ = ("_packet", "__name__", "_overloads")

    def __init__(self, packet, name: str):
        self._packet = packet
        self.__name__ = name
        self._overloads: dict[str, Overload] = {}

    def __call__(self, *args, **kwargs):
        record_call(2)
        return self._packet(*args, **kwargs)

    def __getattr__(self, overload: str) -> Overload:
        ov = self._overloads.get(overload)
        if ov is None:
            ov = Overload(getattr(self._packet, overload), f"{self.__name__}.{overload}")
            self._overloads[overload] = ov
        return ov

    @property
    def packet(self):
        """The ``torch.ops`` OpOverloadPacket behind this attribute."""
        return self._packet


class SimulatedTorchNpu(types.ModuleType):
    """The module object installed as ``sys.modules["torch_npu"]``."""

    def __getattr__(self, name: str):
        schemas = self.__dict__.get("_schemas")
        if schemas is not None and schemas.overloads(name):
            raise AttributeError(
                f"torch_npu.{name}: the simulated NPU has no kernel for this operator (its published "
                f"schema: {schemas.overloads(name)[0][:120]}...); add one to ascend_ops.simulator.kernels*"
            )
        raise AttributeError(f"module 'torch_npu' (simulated) has no attribute {name!r}")


def build_module(schemas: Schemas, npu_namespace) -> SimulatedTorchNpu:
    """A fresh simulated ``torch_npu`` module exposing every defined operator and ``.npu``."""
    mod: Any = SimulatedTorchNpu("torch_npu", "Simulated torch_npu (ascend_ops.simulator); tensors live on the CPU.")
    mod.__version__ = TORCH_NPU_VERSION
    mod.__simulated__ = True
    # importlib.util.find_spec("torch_npu") (accelerate, transformers) raises on a module in
    # sys.modules whose __spec__ is None; give it a loader-less spec like a namespace module's
    mod.__spec__ = importlib.machinery.ModuleSpec("torch_npu", None, origin="ascend_ops.simulator")
    mod._schemas = schemas
    mod.npu = npu_namespace
    # a fresh module is a fresh process for process-global operator state (the ATB rope table)
    reset_atb_rope_tables()
    for base in define_all(schemas):
        ns = schemas.namespace(base)
        setattr(mod, base, Operator(getattr(getattr(torch.ops, ns), base), base))
    return mod
