# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``AscendExampleConnector``: vLLM's ``ExampleConnector`` over the Ascend KV layout.

vLLM's ``ExampleConnector`` (``vllm/distributed/kv_transfer/kv_connector/v1/example_connector.py``)
moves a prompt's KV between instances through a shared directory: the producer writes one
safetensors file per layer (``<shared_storage_path>/<hash of the prompt's block-aligned
tokens>/<layer>.safetensors``, key ``kv_cache``, vLLM's per-token layout), the consumer's
scheduler counts a hit when that folder exists and its worker loads the files into the blocks
allocated for the request. Upstream indexes vLLM's logical per-layer view by slot, which on
Ascend addresses other bytes (``kv_transfer/block_io.py``); this subclass keeps the scheduler
half, the metadata and the file format, and replaces the worker half:

* save: in ``wait_for_save`` (after the step's forward, every layer written), whole blocks per
  layer through ``block_io`` (``ascend_ops.read_kv_blocks``), into a temporary folder renamed
  into place once complete, so a consumer never sees half a prompt (a producer that dies
  mid-save leaves no hit). ``save_kv_layer`` (the per-layer hook in vLLM's attention op,
  ``vllm/model_executor/layers/attention/kv_transfer_utils.py``) does nothing: a FULL graph
  replay would skip it, the step-end save does not depend on the graph mode;
* load: in ``start_load_kv`` (before the forward: vLLM's Model Runner V2 runs sync loads in
  ``pre_forward``, ``vllm/v1/worker/gpu/kv_connector.py``), from the caches registered through
  ``register_kv_caches``, so no attention metadata is needed (upstream returns early without);
  whole blocks through ``ascend_ops.write_kv_blocks``;
* errors: a file that cannot be written is logged with its path and cause and the producer keeps
  serving (the consumer then computes the prompt itself); a file that cannot be read marks the
  request's blocks as failed loads (``get_block_ids_with_load_errors``), which vLLM's scheduler
  turns into a request error or a recompute (``kv_load_failure_policy``); a producer whose
  ``shared_storage_path`` cannot be written fails at start-up naming the path.

Chosen over a patch of vLLM's class: the subclass is selected through vLLM's public
``kv_connector_module_path`` (``vllm/distributed/kv_transfer/kv_connector/factory.py``), set by
the platform when ``kv_connector`` is ``ExampleConnector`` (``kv_transfer/routing.py``), so
vLLM's own class stays untouched in every process and no drift check is needed beyond the
methods overridden here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

import safetensors.torch
import torch
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.distributed.kv_transfer.kv_connector.v1.example_connector import (
    ExampleConnector as _UpstreamExampleConnector,
)
from vllm.distributed.kv_transfer.kv_connector.v1.example_connector import (
    ExampleConnectorMetadata,
    ReqMeta,
)
from vllm.logger import init_logger

from vllm_ascend_platform.kv_transfer import block_io
from vllm_ascend_platform.options.kv_connectors import PRODUCER_ROLES, check_writable

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.v1.kv_cache_interface import KVCacheConfig

logger = init_logger("vllm.ascend.kv_transfer")

class AscendExampleConnector(_UpstreamExampleConnector):
    """``ExampleConnector`` whose worker half reads and writes the Ascend KV layout (same
    scheduler half, metadata and files as vLLM's)."""

    def __init__(self, vllm_config: VllmConfig, role: KVConnectorRole,
                 kv_cache_config: KVCacheConfig) -> None:
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        self._layers: dict[str, Any] = vllm_config.compilation_config.static_forward_context
        self._kv_caches: dict[str, torch.Tensor] = {}
        self._load_errors: set[int] = set()
        self.saved_tokens = 0  # counters of this worker, for tests and logs
        self.loaded_tokens = 0
        if self._kv_transfer_config.kv_role in PRODUCER_ROLES:
            check_writable(self._storage_path)

    # ---- worker: caches ------------------------------------------------------------------
    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        """Layer name -> vLLM's logical per-layer view (Model Runner V2's ``kv_caches_dict``)."""
        self._kv_caches = dict(kv_caches)

    def _layer_blocks(self, layer_name: str, request: ReqMeta):
        """(key_cache, value_cache, kernel block ids, is_mla) of a request's whole blocks."""
        kv = self._kv_caches[layer_name]
        key_cache, value_cache = block_io.layer_parts(self._layers.get(layer_name), kv,
                                                      layer_name)
        manager_ids = request.slot_mapping[:: self._block_size] // self._block_size
        ids = block_io.kernel_block_ids(manager_ids, self._block_size, key_cache)
        return key_cache, value_cache, ids, kv.dim() == 3

    # ---- worker: load --------------------------------------------------------------------
    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        metadata = self._get_connector_metadata()
        assert isinstance(metadata, ExampleConnectorMetadata)
        for request in metadata.requests:
            if request.is_store or request.slot_mapping.numel() == 0:
                continue
            filename = self._storage_path
            try:
                for layer_name in self._kv_caches:
                    key_cache, value_cache, ids, _ = self._layer_blocks(layer_name, request)
                    filename = self._generate_filename_debug(layer_name, request.token_ids,
                                                             request.mm_hashes)
                    tokens = safetensors.torch.load_file(filename)["kv_cache"]
                    block_io.write_tokens(tokens, key_cache, value_cache, ids)
            except Exception as err:  # any unreadable transfer (safetensors raises its own types)
                blocks = request.slot_mapping[:: self._block_size] // self._block_size
                self._load_errors.update(int(b) for b in blocks.tolist())
                logger.error("ExampleConnector: loading the KV of %d prompt tokens from %s "
                             "failed (%s: %s); their blocks are reported as load errors",
                             len(request.slot_mapping), filename, type(err).__name__, err)
                continue
            self.loaded_tokens += len(request.slot_mapping)
            logger.debug("ExampleConnector: loaded the KV of %d prompt tokens",
                         len(request.slot_mapping))

    def get_block_ids_with_load_errors(self) -> set[int]:
        errors, self._load_errors = self._load_errors, set()
        return errors

    # ---- worker: save --------------------------------------------------------------------
    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any,
                      **kwargs: Any) -> None:
        """Nothing per layer: :meth:`wait_for_save` saves whole prompts after the forward."""
        return

    def wait_for_save(self) -> None:
        if not self.has_connector_metadata():
            return
        metadata = self._get_connector_metadata()
        assert isinstance(metadata, ExampleConnectorMetadata)
        for request in metadata.requests:
            if request.is_store and request.slot_mapping.numel() > 0:
                self._save_request(request)

    def _save_request(self, request: ReqMeta) -> None:
        folder = self._generate_foldername_debug(request.token_ids, request.mm_hashes)
        if os.path.exists(folder):
            return
        tmp = None
        try:
            tmp = tempfile.mkdtemp(dir=self._storage_path, prefix=".partial-")
            for layer_name in self._kv_caches:
                key_cache, value_cache, ids, mla = self._layer_blocks(layer_name, request)
                tokens = block_io.read_tokens(key_cache, value_cache, ids, mla)
                safetensors.torch.save_file({"kv_cache": tokens.cpu().contiguous()},
                                            os.path.join(tmp, f"{layer_name}.safetensors"))
            os.rename(tmp, folder)
            tmp = None
        except OSError as err:
            if os.path.isdir(folder):  # another producer finished the same prompt first
                return
            logger.error("ExampleConnector: saving the KV of %d prompt tokens under %s failed "
                         "(%s: %s); consumers will compute this prompt themselves",
                         len(request.slot_mapping), self._storage_path, type(err).__name__, err)
            return
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        self.saved_tokens += len(request.slot_mapping)


#: the name vLLM's factory looks up in ``kv_connector_module_path`` (``kv_connector``'s value)
ExampleConnector = AscendExampleConnector
