# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The simulated SoC: which Ascend product the simulated NPU is, and which operators it has.

``ASCEND_OPS_SIM_SOC`` picks the product family: ``A3`` (default: Atlas A3, the main target of
the plugin and of vllm-ascend's large-model deployments), ``A2`` (Atlas A2 / 800I A2) or
``310P`` (Atlas 300I inference cards). It is read at every call, so a test can switch it with
``monkeypatch.setenv``. ``device_name()`` is what ``torch.npu.get_device_name()`` returns on
that product (aclrtGetSocName: one of the names Ascend/pytorch
``torch_npu/csrc/core/npu/NpuVariables.cpp``@9e73e70 maps, ``socVersionMap``), and
``soc_version()`` its ``SocVersion`` enum value (``NpuVariables.h``: Ascend910B2 = 221,
Ascend910_9391 = 250, Ascend310P3 = 202), the number ``torch_npu.npu.get_soc_version()`` gives
and vllm-ascend maps to a family (``vllm_ascend/device/hardware.py``@182b75e,
``device_type_from_runtime_soc``: 220-225 A2, 250-255 A3, 200-205 310P).

``AVAILABLE`` lists, per operator that has a simulator kernel, the families its documentation
says it runs on; ``require(op)`` (called before each simulated operator runs) raises
``SimulatedNpuError`` naming the operator, the SoC and the source when the current family is not
among them. Sources, in this order (DESIGN: kernel source, then docs, then hardware-proven use):

* [WHEEL] ``torch_npu/_op_plugin_docs.py`` of the torch-npu 2.13.0 wheel, section 支持的型号.
* [OPDOC] Ascend/op-plugin@517f2e7 ``docs/zh/custom_APIs/torch_npu/torch_npu-<op>.md``,
  table 产品支持情况 (newer than the wheel's docstrings; it adds A3 to several operators).
* [VA] vllm-project/vllm-ascend@182b75e calling the operator on that family (hardware-proven).

An operator is available on a family when any of the three says so (a product missing from an
older list is not evidence that it lacks the kernel; a product on a list is). Operators with no
product list in these sources (ATB ``_npu_*`` operators, which are not in either document) are
not gated.
"""

from __future__ import annotations

import os

from ascend_ops.simulator.errors import SimulatedNpuError

ENV = "ASCEND_OPS_SIM_SOC"
DEFAULT = "A3"
FAMILIES = ("A2", "A3", "310P")
_ALL = frozenset(FAMILIES)
_A2_A3 = frozenset({"A2", "A3"})

# family -> (aclrtGetSocName, SocVersion enum value); NpuVariables.cpp / NpuVariables.h
_DEVICES = {"A2": ("Ascend910B2", 221), "A3": ("Ascend910_9391", 250), "310P": ("Ascend310P3", 202)}

_OPD = "Ascend/op-plugin@517f2e7 docs/zh/custom_APIs/torch_npu/torch_npu-{}.md"
_WHEEL = "torch-npu 2.13.0 torch_npu/_op_plugin_docs.py ({}, 支持的型号)"
_VA = "vllm-project/vllm-ascend@182b75e {}"

# op -> (families, source)
AVAILABLE: dict[str, tuple[frozenset, str]] = {
    "npu_moe_init_routing": (frozenset({"A2"}), f"{_WHEEL.format('npu_moe_init_routing')}: Atlas A2 "
                             f"only; {_OPD.format('npu_moe_init_routing')}: Atlas A2 only"),
    "npu_moe_finalize_routing": (frozenset({"A2"}), f"{_WHEEL.format('npu_moe_finalize_routing')}: Atlas "
                                 f"A2 only; {_OPD.format('npu_moe_finalize_routing')}: Atlas A2 only"),
    "npu_batch_gather_matmul": (frozenset({"A2"}), f"{_WHEEL.format('npu_batch_gather_matmul')}: Atlas "
                                "A2 训练系列产品/Atlas 800I A2 推理产品 only"),
    "npu_batch_gather_matmul_": (frozenset({"A2"}), f"{_WHEEL.format('npu_batch_gather_matmul_')}: Atlas "
                                 "A2 训练系列产品/Atlas 800I A2 推理产品 only"),
    "npu_moe_init_routing_v2": (_ALL, f"{_OPD.format('npu_moe_init_routing_v2')}: A3, A2, Atlas 推理系列 "
                                f"(310P); {_VA.format('vllm_ascend/_310p/fused_moe/token_dispatcher.py')}"),
    "npu_moe_token_unpermute": (_ALL, f"{_WHEEL.format('npu_moe_token_unpermute')}: Atlas A2/A3 训练系列; "
                                f"{_VA.format('vllm_ascend/_310p/fused_moe/moe_comm_method.py')} (310P)"),
    "npu_moe_gating_top_k": (_A2_A3, f"{_OPD.format('npu_moe_gating_top_k')}: A3, A2"),
    "npu_grouped_matmul": (_ALL, f"{_OPD.format('npu_grouped_matmul')}: A3, A2, Atlas 推理系列 (310P)"),
    "npu_swiglu": (_ALL, f"{_WHEEL.format('npu_swiglu')}: Atlas A2; "
                   f"{_VA.format('vllm_ascend/ops/fused_moe/moe_mlp.py, vllm_ascend/_310p/ops/activation.py')} "
                   "(A2/A3 and 310P)"),
    "npu_quantize": (_ALL, f"{_OPD.format('npu_quantize')}: A3, A2, Atlas 推理系列 (310P)"),
    "npu_dynamic_quant": (_ALL, f"{_OPD.format('npu_dynamic_quant')}: A3, A2; "
                          f"{_VA.format('vllm_ascend/_310p/quantization/methods/w8a8_dynamic.py')} (310P)"),
    "npu_quant_matmul": (_ALL, f"{_OPD.format('npu_quant_matmul')}: A3, A2, Atlas 推理系列加速卡 (310P)"),
    "npu_add_rms_norm": (_ALL, f"{_OPD.format('npu_add_rms_norm')}: A3, A2, Atlas 推理系列 (310P)"),
    "npu_fused_infer_attention_score": (_A2_A3, f"{_OPD.format('npu_fused_infer_attention_score')}: A3, A2"),
    "_npu_fused_infer_attention_score_get_max_workspace": (
        _A2_A3, f"as npu_fused_infer_attention_score ({_OPD.format('npu_fused_infer_attention_score')})"),
    "npu_lightning_indexer": (_A2_A3, f"{_OPD.format('npu_lightning_indexer')}: Ascend 950, A2, A3 "
                              f"推理系列; {_VA.format('vllm_ascend/device/device_op.py')}"),
    "npu_sparse_flash_attention": (_A2_A3, f"{_OPD.format('npu_sparse_flash_attention')}: Ascend 950, "
                                   "A2, A3 推理系列"),
}
# No product list in either document; vllm-ascend calls them on A2/A3 and (npu_rms_norm) in its
# 310P path (vllm_ascend/_310p/ops/layernorm.py)
_UNLISTED = {"npu_rms_norm": _ALL}


def current() -> str:
    """The simulated product family (``ASCEND_OPS_SIM_SOC``, default A3); ValueError for an
    unknown value, naming the accepted ones."""
    soc = os.environ.get(ENV, DEFAULT).strip().upper() or DEFAULT
    if soc not in FAMILIES:
        raise ValueError(f"{ENV}={soc!r}: expected one of {FAMILIES}")
    return soc


def device_name(soc: str | None = None) -> str:
    """``torch.npu.get_device_name()`` of the simulated product (e.g. ``Ascend910_9391`` on A3)."""
    return _DEVICES[soc or current()][0]


def soc_version(soc: str | None = None) -> int:
    """``torch_npu.npu.get_soc_version()`` of the simulated product (e.g. 250 on A3)."""
    return _DEVICES[soc or current()][1]


def families(op: str) -> frozenset | None:
    """Families ``op`` is documented for (None: no product list found for it)."""
    entry = AVAILABLE.get(op)
    return entry[0] if entry is not None else _UNLISTED.get(op)


def require(op: str) -> None:
    """SimulatedNpuError naming ``op``, the SoC and the source when ``op`` is not available on
    the simulated SoC; ATB (``_npu_*``) and unlisted operators pass."""
    entry = AVAILABLE.get(op)
    if entry is None:
        return
    fams, source = entry
    soc = current()
    if soc not in fams:
        raise SimulatedNpuError(
            f"{op}: not available on the simulated SoC {soc} ({device_name(soc)}; {ENV}); "
            f"documented for {', '.join(sorted(fams))} only [{source}]")
