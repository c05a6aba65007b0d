# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which KV connectors (``--kv-transfer-config``) the Ascend platform serves, and the routing of
a served one to its Ascend implementation.

A connector reaches the device KV cache either by block through vLLM's logical per-layer view
(``vllm/distributed/kv_transfer/kv_connector/v1/example_connector.py``), by registering the raw
cache memory with a transfer engine (Mooncake, NIXL, MoRIIO: byte ranges computed from vLLM's
page layout), or through CUDA block-copy kernels into host memory (``OffloadingConnector``'s CPU
backend, ``vllm/v1/kv_offload/``). The Ascend backends keep each layer's slab as separate
contiguous K and V caches, so each of these paths reads other bytes unless it goes through the
layout-aware seam (``vllm_ascend_platform/kv_transfer/block_io.py``). Served: the connectors
wired to that seam; every other name is refused at start-up, with why (docs/pd-disaggregation.md).
No vLLM import here (options/ is read before vLLM builds its config).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from vllm_ascend_platform.options.refusal import Refusal

#: served connector name -> the module whose attribute of that name is the Ascend class
#: (vLLM's factory loads ``getattr(import_module(kv_connector_module_path), kv_connector)``)
SERVED: dict[str, str] = {
    "ExampleConnector": "vllm_ascend_platform.kv_transfer.example_connector",
}

_LAYOUT = ("addresses the KV cache in vLLM's page layout, which is not the Ascend backends' "
           "separate K and V caches")
#: refused connector name -> why (anything else: :data:`_OTHER`)
WHY_NOT: dict[str, str] = {
    "OffloadingConnector": (
        "--kv-offloading-size / OffloadingConnector copies blocks between the device cache and "
        "host memory with vLLM's CUDA block-copy kernels over vLLM's page layout; not wired to "
        "the Ascend layout yet"),
    "SimpleCPUOffloadConnector": "host offloading " + _LAYOUT + "; not wired yet",
    "MooncakeConnector": (
        "registers the cache memory with the Mooncake transfer engine and moves byte ranges "
        "computed from vLLM's page layout; not wired to the Ascend layout yet"),
    "NixlConnector": (
        "registers the cache memory with NIXL by vLLM's page layout, and its host-buffer path "
        "needs current_platform.discover_numa_topology(), which only vLLM's CPU platform has"),
    "NixlPullConnector": "as NixlConnector",
    "NixlPushConnector": "as NixlConnector",
}
_OTHER = _LAYOUT + " or needs a library not built for Ascend"
FIX = "use kv_connector ExampleConnector (a shared directory), or drop --kv-transfer-config"


#: kv_role values that write to a connector's storage
PRODUCER_ROLES = ("kv_producer", "kv_both")


class SharedStorageError(RuntimeError):
    """``ExampleConnector``'s ``shared_storage_path`` cannot be written."""


def check_writable(path: str) -> None:
    """Create ``path`` if needed and write (then remove) one file in it.

    Raises:
        SharedStorageError: naming the path and the OS error.
    """
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".ascend-probe-"):
            pass
    except OSError as err:
        raise SharedStorageError(
            f"ExampleConnector shared_storage_path {path!r} is not writable "
            f"({type(err).__name__}: {err}); set kv_connector_extra_config.shared_storage_path "
            "to a directory this instance can write") from err


def _config(vllm_config: Any) -> Any:
    return getattr(vllm_config, "kv_transfer_config", None)


def _name(kv_transfer_config: Any) -> str | None:
    return getattr(kv_transfer_config, "kv_connector", None)


def _model_runner_v2() -> bool:
    """True when the installed vLLM has only Model Runner V2 (>= 0.34, docs/model-runner-v2.md)."""
    from packaging.version import Version

    from vllm_ascend_platform.options.table_lines import installed_vllm

    version = installed_vllm()
    return version is None or Version(Version(version).base_version) >= Version("0.34")


def refusal_reason(kv_transfer_config: Any) -> str | None:
    """Why this ``KVTransferConfig`` is refused, or None when it is served (or unset)."""
    if kv_transfer_config is None:
        return None
    name = _name(kv_transfer_config)
    module = getattr(kv_transfer_config, "kv_connector_module_path", None)
    if name in SERVED and module in (None, SERVED[name]):
        if not _model_runner_v2():
            return (f"{name} is wired to vLLM 0.34's Model Runner V2 only "
                    "(vllm/v1/worker/gpu/kv_connector.py); this vLLM runs Model Runner V1")
        return None
    if module:
        return (f"external connector module {module!r} {_LAYOUT} unless written for it; "
                "only the served connectors are routed through the Ascend layout")
    if name is None:
        return "kv_transfer_config names no kv_connector"
    return WHY_NOT.get(name, _OTHER)


def connector_refusals(vllm_config: Any) -> list[Refusal]:
    """The refusal naming the requested connector, when it is not served (else empty)."""
    kv_transfer_config = _config(vllm_config)
    reason = refusal_reason(kv_transfer_config)
    if reason is None:
        return []
    name = _name(kv_transfer_config)
    return [Refusal(f"KV connector {name!r} (--kv-transfer-config)", lambda c, a: True,
                    f"{reason}. {FIX}")]


def route_served_connector(vllm_config: Any) -> None:
    """Point a served connector at its Ascend class: set ``kv_connector_module_path`` (vLLM's
    factory then loads our class under the same name in every process that builds one).
    A producer's ``ExampleConnector`` directory is checked here, before the weights load.

    Raises:
        SharedStorageError: a producer's ``shared_storage_path`` cannot be written.
    """
    kv_transfer_config = _config(vllm_config)
    name = _name(kv_transfer_config)
    if kv_transfer_config is None or name not in SERVED:
        return
    kv_transfer_config.kv_connector_module_path = SERVED[name]
    if name == "ExampleConnector" and kv_transfer_config.kv_role in PRODUCER_ROLES:
        extra = kv_transfer_config.kv_connector_extra_config or {}
        check_writable(extra.get("shared_storage_path", "/tmp"))
