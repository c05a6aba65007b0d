# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Run inside a release venv: vLLM's engine start-up as far as the engine config, no weights.

``EngineArgs.__post_init__`` loads vLLM's general plugins (our ``vllm_ascend:register_layers``:
layer-skew check, then every installed layer's register hook) and ``create_engine_config`` runs
the platform's ``check_and_update_config`` (vllm/engine/arg_utils.py, vllm/config/vllm.py of
vLLM 0.32). Prints one JSON line: the current platform class and the layers registered.

Usage: ``python startup_probe.py <model-folder>``
"""

import json
import sys

from vllm.engine.arg_utils import EngineArgs
from vllm.platforms import current_platform

args = EngineArgs(model=sys.argv[1], dtype="float32", max_model_len=256, enforce_eager=True,
                  gpu_memory_utilization=0.5)
args.create_engine_config()

from vllm_ascend_platform.startup import plugin  # noqa: E402

print(json.dumps({"platform": type(current_platform).__qualname__,
                  "module": type(current_platform).__module__,
                  "layers": plugin.layers_registered()}))
