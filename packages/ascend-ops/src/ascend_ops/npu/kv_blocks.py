# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of ``read_kv_blocks`` / ``write_kv_blocks``: aten index ops on the device
(``index_select`` / ``index_copy_`` along the block dim of each part cache, then one
concatenation), the calls vllm-ascend's KV connectors make on each layer's separate K and V
caches (vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py@182b75e,
``reformat_kv_cache_hybrid_linear_torch``). torch_npu publishes no block gather/scatter
operator for this layout (vllm-ascend's CPU offloading copies blocks with its own compiled
``swap_blocks_batch``: vllm_ascend/distributed/kv_transfer/kv_pool/kv_offload/native/cpu_npu.py),
so no simulator rule applies: the simulated NPU runs these aten ops as they are.

No block-id range check here: it would read the ids back to the host (a sync, illegal inside a
graph capture); the device's index kernels bound-check them.
"""

from __future__ import annotations

from ascend_ops.reference.kv_blocks import gather_blocks, scatter_blocks


def read_kv_blocks(key_cache, value_cache, block_ids):
    return gather_blocks(key_cache, value_cache, block_ids)


def write_kv_blocks(blocks, key_cache, value_cache, block_ids):
    scatter_blocks(blocks, key_cache, value_cache, block_ids)
