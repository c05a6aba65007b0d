# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which vLLM 0.34 options the Ascend platform serves, refuses, or leaves to vLLM.

The table (options/table.py, options/table_env.py, and options/table_lines.py for the rows of
one vLLM line only) classifies every engine argument, quantization
method, ``--kv-cache-dtype`` choice and ``VLLM_*`` variable read below the engine; this module
lists the same names from vLLM itself (:func:`vllm_names`), turns the "refused" rows into
start-up refusals that features.py runs (:func:`option_refusals`), and renders
docs/option-support.md (``python -m vllm_ascend_platform.options.support > docs/option-support.md``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ascend_platform.options import table as T
from vllm_ascend_platform.options import table_lines as L
from vllm_ascend_platform.options.table_env import ENV_GROUPS

KINDS = ("engine argument", "quantization", "kv_cache_dtype", "environment variable")

#: vllm/ folders (and files) whose ``envs.VLLM_*`` reads count as "below the engine"
BELOW_ENGINE = ("v1/worker", "v1/attention", "v1/sample", "model_executor", "distributed",
                "compilation", "lora", "_custom_ops.py")

@dataclass(frozen=True)
class Row:
    """One classified option: ``status`` is supported / refused / not ours; ``evidence`` the
    test id, the fix a refusal names, or why the platform does not affect the option."""

    kind: str
    name: str
    status: str
    evidence: str
    default: str | None = None  # environment variables: the value that is not refused
    #: the vLLM versions that define the option (PEP 440 specifier); None: every supported line
    vllm: str | None = None


#: ``rows(line=EVERY_LINE)``: the rows of every supported vLLM line
EVERY_LINE = "every line"


def _expand(kind: str, groups, vllm: str | None = None) -> list[Row]:
    out = []
    for status, evidence, names, *rest in groups:
        default = rest[0] if rest else None
        out += [Row(kind, n, status, evidence, default, vllm) for n in names.split()]
    return out


def _on_line(row: Row, version: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    if row.vllm is None:
        return True
    try:  # judged by the release, as the version check does (0.34.0+empty is 0.34.0)
        release = Version(".".join(str(p) for p in Version(version).release))
    except InvalidVersion:
        return True
    return SpecifierSet(row.vllm).contains(release, prereleases=True)


def rows(line: str | None = None) -> list[Row]:
    """The rows of the table, in table order: those of the vLLM version ``line`` (default: the
    installed vLLM; every line when vLLM is not installed), or of every supported line with
    ``line=EVERY_LINE`` (options/table_lines.py)."""
    removed = {(KINDS[k], n): spec for spec, k, names in L.REMOVED for n in names.split()}
    every = [*_expand(KINDS[0], T.ARG_GROUPS), *_expand(KINDS[1], T.QUANT_GROUPS),
             *_expand(KINDS[2], T.KV_GROUPS), *_expand(KINDS[3], ENV_GROUPS)]
    every = [dataclasses.replace(r, vllm=removed.get((r.kind, r.name))) for r in every]
    for spec, k, groups in L.LINE_GROUPS:
        every += _expand(KINDS[k], groups, spec)
    every.sort(key=lambda r: KINDS.index(r.kind))  # stable: table order within a kind
    if line is None:
        line = L.installed_vllm() or EVERY_LINE
    if line == EVERY_LINE:
        return every
    return [r for r in every if _on_line(r, line)]


def vllm_names() -> dict[str, set[str]]:
    """The option names the installed vLLM itself defines, per kind: ``EngineArgs`` dataclass fields
    (the CLI flags), ``QUANTIZATION_METHODS``, the ``CacheDType`` literal, and the variables of
    ``vllm/envs.py`` read in :data:`BELOW_ENGINE`."""
    import typing

    import vllm
    from vllm import envs
    from vllm.config.cache import CacheDType
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

    from vllm_ascend_platform.options.quant_methods import served

    root = Path(vllm.__file__).parent
    found: set[str] = set()
    pattern = re.compile(r"envs\.(VLLM_[A-Z0-9_]+)")
    for part in BELOW_ENGINE:
        files = [root / part] if part.endswith(".py") else sorted((root / part).rglob("*.py"))
        for f in files:
            found.update(pattern.findall(f.read_text(encoding="utf-8")))
    return {
        KINDS[0]: {f.name for f in dataclasses.fields(EngineArgs)},
        # vLLM's methods plus those our models layer publishes (registered when its plugin runs)
        KINDS[1]: set(QUANTIZATION_METHODS) | set(served()),
        KINDS[2]: set(typing.get_args(CacheDType)),
        KINDS[3]: found & set(envs.environment_variables),
    }


# ---- start-up checks for the refused engine arguments -------------------------------------
_SAME = object()  # "equal to a default-constructed instance of the value's own class"
_P, _C, _K, _M = "parallel_config.", "cache_config.", "kernel_config.", "model_config."
_L, _MB = "lora_config.", "mamba_config."
_ASCEND_BACKENDS = (None, "ASCEND_ATTN", "ASCEND_MLA", "ASCEND_SFA")
_OUR_WORKER = "vllm_ascend_platform.worker.worker.NPUWorker"
_SLEEP_BACKEND = "ascend"  # sleep_mode.BACKEND_NAME (that module imports vLLM's allocator)

#: refused engine argument -> (VllmConfig attribute path, the value or test that is fine)
ARG_CHECKS: dict[str, tuple[str, Any]] = {
    "attention_backend": ("attention_config.backend",
                          lambda v: getattr(v, "name", v) in _ASCEND_BACKENDS),
    "kv_offloading_size": (_C + "kv_offloading_size", None),
    "kv_offloading_backend": (_C + "kv_offloading_backend", "native"),
    "prefill_context_parallel_size": (_P + "prefill_context_parallel_size", 1),
    "decode_context_parallel_size": (_P + "decode_context_parallel_size", 1),
    "dcp_comm_backend": (_P + "dcp_comm_backend", "ag_rs"),
    "dcp_q_replicate": (_P + "dcp_q_replicate", False),
    "dcp_kv_cache_interleave_size": (_P + "dcp_kv_cache_interleave_size", 1),
    "cp_kv_cache_interleave_size": (_P + "cp_kv_cache_interleave_size", 1),
    "enable_dbo": (_P + "enable_dbo", False),
    "ubatch_size": (_P + "ubatch_size", 0),
    "dbo_decode_token_threshold": (_P + "dbo_decode_token_threshold", 32),
    "dbo_prefill_token_threshold": (_P + "dbo_prefill_token_threshold", 512),
    "enable_eplb": (_P + "enable_eplb", False),
    # vLLM 0.34 resolves EPLBConfig.num_redundant_experts (default None) to 0 in the config
    "eplb_config": (_P + "eplb_config", lambda v: v == type(v)(
        num_redundant_experts=v.num_redundant_experts) and not v.num_redundant_experts),
    "enable_elastic_ep": (_P + "enable_elastic_ep", False),
    "expert_placement_strategy": (_P + "expert_placement_strategy", "linear"),
    "enable_ep_weight_filter": (_P + "enable_ep_weight_filter", False),
    "moe_backend": (_K + "moe_backend", "auto"),
    "linear_backend": (_K + "linear_backend", "auto"),
    "sparse_indexer_topk_backend": (_K + "sparse_indexer_topk_backend", "auto"),
    "all2all_backend": (_P + "all2all_backend", "allgather_reducescatter"),
    "enable_hc_sp": (_P + "enable_hc_sp", False),
    "enable_batch_sharded_sampling": (_P + "enable_batch_sharded_sampling", lambda v: not v),
    "monokernel": (_K + "monokernel", False),
    "sleep_mode_backend": (_M + "sleep_mode_backend", lambda v: v in ("cumem", _SLEEP_BACKEND)),
    "cpu_offload_gb": ("offload_config.uva.cpu_offload_gb", 0),
    "cpu_offload_params": ("offload_config.uva.cpu_offload_params", lambda v: not v),
    "offload_backend": ("offload_config.offload_backend", "auto"),
    "offload_group_size": ("offload_config.prefetch.offload_group_size", 0),
    "offload_num_in_group": ("offload_config.prefetch.offload_num_in_group", 1),
    "offload_prefetch_step": ("offload_config.prefetch.offload_prefetch_step", 1),
    "offload_params": ("offload_config.prefetch.offload_params", lambda v: not v),
    "enable_cumem_allocator": (_M + "enable_cumem_allocator", False),
    "enable_nccl_comm_suspend": (_M + "enable_nccl_comm_suspend", False),
    "sleep_mode_offload_cudagraph": (_M + "sleep_mode_offload_cudagraph", False),
    "enable_return_routed_experts": ("aux_output_config.enable_return_routed_experts", False),
    "kv_sharing_fast_prefill": (_C + "kv_sharing_fast_prefill", False),
    "kv_cache_dtype_skip_layers": (_C + "kv_cache_dtype_skip_layers", lambda v: not v),
    "engram_config": ("engram_config", None),
    # vLLM 0.34: None (the default, automatic) as well as False
    "numa_bind": (_P + "numa_bind", lambda v: v in (None, False)),
    "numa_bind_nodes": (_P + "numa_bind_nodes", None),
    "numa_bind_cpus": (_P + "numa_bind_cpus", None),
    "fully_sharded_loras": (_L + "fully_sharded_loras", False),
    "enable_mixed_moe_lora_format": (_L + "enable_mixed_moe_lora_format", False),
    "enable_moe_shared_loras": (_L + "enable_moe_shared_loras", False),
    "specialize_active_lora": (_L + "specialize_active_lora", False),
    "enable_fault_tolerance": (_P + "enable_fault_tolerance", False),
    # vLLM 0.34 only (options/table_lines.py): None (default) resolves to False off CUDA
    "enable_extensible_kv_cache": (_C + "enable_extensible_kv_cache", lambda v: not v),
    "checkpoint_prepare_on_startup": (_M + "checkpoint_prepare_on_startup", False),
    "fault_tolerance_config": (_P + "fault_tolerance_config", _SAME),
    "weight_transfer_config": ("weight_transfer_config", None),
    "mamba_cache_dtype": (_C + "mamba_cache_dtype", "auto"),
    "mamba_ssm_cache_dtype": (_C + "mamba_ssm_cache_dtype", "auto"),
    "mamba_block_size": (_C + "mamba_block_size", None),
    "enable_mamba_shared_prefix_checkpoint": (_C + "enable_mamba_shared_prefix_checkpoint", False),
    "use_replayssm": (_C + "use_replayssm", False),
    "replayssm_buffer_len": (_C + "replayssm_buffer_len", 16),
    "mamba_backend": (_MB + "backend", lambda v: getattr(v, "name", v) in ("TRITON", "triton")),
    "mamba_cache_philox_rounds": (_MB + "stochastic_rounding_philox_rounds", 0),
    "mamba_config": ("mamba_config", _SAME),
    "worker_cls": (_P + "worker_cls", lambda v: v in ("auto", _OUR_WORKER)),
    "model_impl": (_M + "model_impl", lambda v: str(v) in ("auto", "vllm")),
}


def config_value(vllm_config: Any, path: str) -> tuple[bool, Any]:
    """(found, value) of a dotted attribute path; a missing sub-config is (False, None)."""
    obj = vllm_config
    for part in path.split("."):
        if obj is None:
            return False, None
        if isinstance(obj, dict):
            if part not in obj:
                return False, None
            obj = obj[part]
        elif hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            return False, None
    return True, obj


def _fine(value: Any, ok: Any) -> bool:
    if ok is _SAME:
        try:
            return value == type(value)()
        except TypeError:
            return False
    if callable(ok):
        return bool(ok(value))
    return value == ok


def _arg_requested(name: str) -> Callable[[Any, Any], bool]:
    path, ok = ARG_CHECKS[name]

    def requested(vllm_config: Any, _ascend_config: Any) -> bool:
        found, value = config_value(vllm_config, path)
        return found and not _fine(value, ok)

    return requested


def _env_requested(row: Row) -> Callable[[Any, Any], bool]:
    def requested(_vllm_config: Any, _ascend_config: Any) -> bool:
        value = os.environ.get(row.name)
        return value is not None and value.strip() not in ("", row.default)

    return requested


def flag(name: str) -> str:
    """The CLI spelling of an engine argument."""
    return "--" + name.replace("_", "-")


def option_refusals() -> list:
    """refusal.Refusal objects for every refused engine argument and environment variable
    (kv_cache_dtype: :func:`kv_cache_refusal`; quantization: NPUPlatform.verify_quantization)."""
    from vllm_ascend_platform.options.refusal import Refusal

    out = []
    for row in rows():
        if row.status != T.REFUSED:
            continue
        if row.kind == KINDS[0] and row.name in ARG_CHECKS:
            out.append(Refusal(f"{flag(row.name)} / {row.name}", _arg_requested(row.name),
                               row.evidence))
        elif row.kind == KINDS[3]:
            out.append(Refusal(f"environment variable {row.name}", _env_requested(row),
                               row.evidence))
    out.append(Refusal("--kv-cache-dtype / kv_cache_dtype", _kv_refused, T.KV_FIX))
    return out


def check_quantization(method: str, supported: list[str]) -> None:
    """Raise ValueError naming ``--quantization <method>`` and the fix when ``method`` is not
    in ``supported`` (NPUPlatform.supported_quantization)."""
    if method in supported:
        return
    row = {r.name: r for r in rows() if r.kind == KINDS[1]}.get(method)
    why = row.evidence if row is not None else "it is not in the Ascend support table"
    raise ValueError(
        f"vllm-ascend does not serve --quantization {method} (quantization={method!r}): {why}. "
        f"Served methods: {', '.join(supported)}."
    )


# ---- kv_cache_dtype ------------------------------------------------------------------------
def kv_cache_problem(vllm_config: Any) -> str | None:
    """Why this config's ``kv_cache_dtype`` is refused (None when it is served)."""
    import torch

    from vllm_ascend_platform import envs

    cache = getattr(vllm_config, "cache_config", None)
    dtype = getattr(cache, "cache_dtype", "auto") if cache is not None else "auto"
    if dtype == "auto":
        return None
    row = {r.name: r for r in rows() if r.kind == KINDS[2]}.get(dtype)
    if row is None or row.status != T.SUPPORTED:
        return f"{dtype!r} is not built on Ascend"
    model = getattr(vllm_config, "model_config", None)
    if model is not None and getattr(model, "use_mla", False):
        return f"{dtype!r} with an MLA model (ASCEND_MLA keeps its latent cache in the model dtype)"
    model_dtype = getattr(model, "dtype", None)
    same = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(dtype) == model_dtype
    if (envs.simulate_npu() or not envs.emulate()) and not same:
        return f"{dtype!r} on the NPU branch (model dtype {model_dtype})"
    return None


def _kv_refused(vllm_config: Any, _ascend_config: Any) -> bool:
    return kv_cache_problem(vllm_config) is not None


# ---- rendering -----------------------------------------------------------------------------
def render_markdown() -> str:
    """docs/option-support.md: one table per kind, rows in table order, the rows of every
    supported vLLM line (a line-only row names its range), so the page is the same whichever
    supported vLLM renders it."""
    from vllm_ascend_platform.startup.version_check import PLATFORM_VLLM

    lines = [
        "# vLLM option support on Ascend",
        "",
        f"Covers the supported vLLM versions ({PLATFORM_VLLM}); generated from the support table "
        "(`packages/ascend-platform/src/vllm_ascend_platform/options/table.py`, "
        "`options/table_env.py`, `options/table_lines.py`) by `python -m vllm_ascend_platform.options.support > "
        "docs/option-support.md`; `packages/ascend-platform/tests/test_option_table.py` fails when vLLM's lists and "
        "the table differ, `tests/e2e/test_option_sweep.py` starts or refuses each row.",
        "",
        "- **supported**: works; the test that shows it is named.",
        "- **refused**: a non-default value stops start-up (before weights load) naming the "
        "option and the fix shown.",
        "- **not ours**: the platform does not affect it (the reason is given).",
        "",
    ]
    all_rows = rows(line=EVERY_LINE)
    for kind in KINDS:
        these = [r for r in all_rows if r.kind == kind]
        counts = {s: sum(r.status == s for r in these) for s in (T.SUPPORTED, T.REFUSED, T.NOT_OURS)}
        lines += [f"## {kind} ({len(these)}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
                  + ")", "", "| name | status | test / fix / reason |", "|---|---|---|"]
        for r in these:
            evidence = r.evidence.replace("|", "\\|")
            name = flag(r.name) if kind == KINDS[0] else r.name
            only = f" (vLLM {r.vllm} only)" if r.vllm else ""
            lines.append(f"| `{name}`{only} | {r.status} | {evidence} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - the docs generator
    print(render_markdown(), end="")
