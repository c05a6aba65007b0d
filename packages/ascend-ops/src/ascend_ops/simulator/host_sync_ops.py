# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Aten ops whose NPU kernels synchronise with the host, read from op-plugin's kernel sources.

On the NPU an aten op runs the op-plugin kernel registered for it (``op_plugin/ops/opapi/*``).
Some of those kernels read device data on the host before they launch: ``.item()`` /
``item<T>()`` on a device tensor, ``EXEC_NPU_CMD_SYNC`` (run, wait, then read the output shape
with ``aclGetViewShape``: data-dependent output sizes) or a CPU fallback (``.cpu()``). Each is a
host-device synchronisation: the host waits for every queued kernel, and inside an NPU graph
capture it fails. The CPU kernel of the same op does not do it, so the simulator needs this
table to know. ``sync_reason(func, args, kwargs)`` names the read (``None`` for ops without).

Source of every entry: Ascend/op-plugin at commit 517f2e7d0f20 (``master``, 2026-08-21),
``op_plugin/ops/opapi/<File>.cpp`` (line of the host read given per entry). How the list was
made: ``git grep -nE '\\.item\\(\\)|item<|\\.cpu\\(\\)|EXEC_NPU_CMD_SYNC|SynchronizeStream'``
over ``op_plugin/ops/opapi`` and ``op_plugin/utils``, each hit read in its kernel. Not listed,
because the value read is already on the host: binary/compare ops (``add``, ``sub``, ``mul``,
``div``, ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge``, ``where``, ``fill_``, ``masked_fill_``,
``bitwise_*``, ``pow``, ``fmod``, ``remainder``, ``atan2``, ``max``/``min`` binary) call
``.item()`` only on a CPU scalar tensor (``IsCPUScalar`` / ``dim() == 0 && !is_npu``, e.g.
``AddKernelNpuOpApi.cpp:52``). Not listed either: training-only kernels (fused SGD,
``_amp_foreach_non_finite_check_and_unscale_``, dropout masks) and ops the project never runs
on the device (upsampling ``*_aa``, ``logit``, ``adaptive_max_pool3d``, ``transform_bias_rescale_qkv``).
Conditional CPU fallbacks that project code does reach are included with their condition.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

aten = torch.ops.aten

_SRC = "Ascend/op-plugin@517f2e7 op_plugin/ops/opapi/"


def _always(args, kwargs) -> bool:
    return True


def _arg(args, kwargs, i: int, name: str, default=None):
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else default


def _bincount(args, kwargs) -> bool:
    # BincountKernelNpuOpApi.cpp:26-35: an empty 1-D input returns before the reads
    self = args[0]
    return not (self.dim() == 1 and self.numel() == 0)


def _one_hot_infers_depth(args, kwargs) -> bool:
    # OneHotKernelNpuOpApi.cpp:57-58: depth is read from the data when num_classes == -1.
    # On the CPU one_hot is CompositeImplicitAutograd: the dispatch modes see its decomposition,
    # whose own bounds checks (aminmax + two .item()) are counted whatever num_classes is
    return _arg(args, kwargs, 1, "num_classes", -1) == -1


def _histc_reads_range(args, kwargs) -> bool:
    # HistcKernelNpuOpApi.cpp:32-34: min == max (the default 0, 0) reads self.min()/self.max()
    return float(_arg(args, kwargs, 2, "min", 0)) == float(_arg(args, kwargs, 3, "max", 0)) and args[0].numel() > 0


def _no_output_size(args, kwargs) -> bool:
    # RepeatInterLeaveKernelNpuOpApi.cpp:235-240: without output_size the total is read from
    # cumsum[-1] and the repeats are checked >= 0 on the host (two reads)
    return kwargs.get("output_size") is None


def _std_var_correction(args, kwargs) -> bool:
    # Std/VarKernelNpuOpApi.cpp: a correction that does not fit aclnn's int64 falls back to CPU
    c = kwargs.get("correction")
    return c is not None and not float(c).is_integer()


def _device_value(args, kwargs) -> bool:
    # IndexFillKernelNpuOpApi.cpp:52/58: value.item() on the (0-d) value tensor, read on the
    # host whatever its device
    value = _arg(args, kwargs, 3, "value")
    return isinstance(value, torch.Tensor)


def _device_std(args, kwargs) -> bool:
    # NormalKernelNpuOpApi.cpp:35: std.min().ge(0).item<bool>() checks a tensor std
    return True


# (overloads, what is read, file:line, predicate on (args, kwargs))
_TABLE: list[tuple[tuple, str, str, Callable]] = [
    ((aten.bincount.default,),
     "torch.bincount: min(self).item() and max(self).item() (output size from the data)",
     "BincountKernelNpuOpApi.cpp:38,42", _bincount),
    ((aten.one_hot.default,),
     "one_hot without num_classes: self.max().item() (depth from the data)",
     "OneHotKernelNpuOpApi.cpp:58", _one_hot_infers_depth),
    ((aten.histc.default, aten.histc.out),
     "histc with min == max: self.min()/self.max().item<double>()",
     "HistcKernelNpuOpApi.cpp:33-34", _histc_reads_range),
    ((aten.repeat_interleave.Tensor, aten.repeat_interleave.self_Tensor),
     "repeat_interleave without output_size: cumsum[-1].item() and (repeats >= 0).all().item()",
     "RepeatInterLeaveKernelNpuOpApi.cpp:238-239", _no_output_size),
    ((aten.equal.default,),
     "torch.equal: result.item()", "EqualKernelNpuOpApi.cpp:30", _always),
    ((aten.nonzero.default, aten.nonzero.out),
     "nonzero: EXEC_NPU_CMD_SYNC + aclGetViewShape (data-dependent output shape)",
     "NonzeroKernelNpuOpApi.cpp:32", _always),
    ((aten.masked_select.default, aten.masked_select.out),
     "masked_select: EXEC_NPU_CMD_SYNC + aclGetViewShape (data-dependent output shape)",
     "MaskedSelectKernelNpuOpApi.cpp:51", _always),
    ((aten._unique2.default, aten._unique.default),
     "unique: EXEC_NPU_CMD_SYNC + aclGetViewShape (data-dependent output shape)",
     "Unique2KernelNpuOpApi.cpp:46, _UniqueKernelNpuOpApi.cpp:53", _always),
    ((aten.unique_dim.default,),
     "unique(dim=): EXEC_NPU_CMD_SYNC + aclGetViewShape (data-dependent output shape)",
     "UniqueDimKernelNpuOpApi.cpp:63", _always),
    ((aten.unique_consecutive.default,),
     "unique_consecutive: EXEC_NPU_CMD_SYNC + aclGetViewShape (data-dependent output shape)",
     "UniqueConsecutiveKernelNpuOpApi.cpp:66", _always),
    ((aten.index_fill_.int_Tensor, aten.index_fill.int_Tensor),
     "index_fill with a tensor value: value.item()",
     "IndexFillKernelNpuOpApi.cpp:52,58", _device_value),
    ((aten.normal.Tensor_Tensor, aten.normal.float_Tensor, aten.normal.Tensor_Tensor_out,
      aten.normal.float_Tensor_out),
     "normal with a tensor std: std.min().ge(0).item<bool>()",
     "NormalKernelNpuOpApi.cpp:35", _device_std),
    ((aten.std.correction, aten.var.correction, aten.std_mean.correction, aten.var_mean.correction),
     "std/var with a non-integer correction: CPU fallback (self.cpu())",
     "StdKernelNpuOpApi.cpp:31-32, VarKernelNpuOpApi.cpp:28-29", _std_var_correction),
]

_BY_OP: dict = {}
for _ops, _what, _where, _pred in _TABLE:
    for _op in _ops:
        _BY_OP[_op] = (f"{_what} [{_SRC}{_where}]", _pred)


def sync_reason(func, args=(), kwargs=None) -> str | None:
    """What ``func``'s op-plugin kernel reads on the host for these arguments (with its source
    line), or None when the NPU kernel runs without a host read."""
    entry = _BY_OP.get(func)
    if entry is None:
        return None
    what, pred = entry
    return what if pred(args, kwargs or {}) else None


def table() -> dict[str, str]:
    """{aten overload name: reason with citation} of every listed op (for docs and tests)."""
    return {str(op): what for op, (what, _) in _BY_OP.items()}
