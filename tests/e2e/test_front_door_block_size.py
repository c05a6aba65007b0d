# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A ``--block-size`` the Ascend attention backends cannot page with is refused at config time.

vLLM 0.32 checks a user block size against the attention backends' kernel block sizes only when
it allocates the KV cache (``select_common_block_size`` in ``vllm/v1/worker/utils.py``), i.e.
after the weights are loaded and profiled; the Ascend platform refuses it in
``check_and_update_config`` instead, naming the flag and a size that works. Both Ascend backends
(ASCEND_ATTN, ASCEND_MLA) page in multiples of 16 tokens (``get_supported_kernel_block_sizes``).
Each case is a process start, not an engine start.
"""

from __future__ import annotations

import pytest
from test_server_helpers import demo_model_path, emulation_env, run_to_exit, vllm_serve

MODEL_LOADING = ("Loading model", "Loading weights", "Starting to load model")


@pytest.mark.parametrize("block_size, suggested", [(7, 16), (40, 48)])
def test_block_size_not_a_multiple_of_16_refused_before_loading(block_size, suggested):
    cmd = vllm_serve(demo_model_path(), "--max-model-len", "512", "--dtype", "float32", "--port",
                     "1", "--block-size", str(block_size))
    code, out = run_to_exit(cmd, emulation_env())
    assert code != 0
    assert (f"--block-size {block_size} does not fit the Ascend attention backend ASCEND_ATTN, "
            f"which pages the KV cache in blocks of a multiple of 16 tokens; use e.g. "
            f"--block-size {suggested} (the default is 128)") in out, out[-3000:]
    assert not any(marker in out for marker in MODEL_LOADING)
