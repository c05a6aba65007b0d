# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of test_option_sweep.py: build a VllmConfig (no weights, no engine) per case.

stdin: JSON list of {"id", "argv", "env", "kwargs"}; argv are CLI flags added to the base command
line (SmolLM2, float32, max_model_len 512); kwargs set EngineArgs fields that have no CLI flag
(a value {"__class__": "module.Class", ...} is built as that config class). For each case the
engine arguments are parsed by vLLM's
own CLI parser and ``EngineArgs.create_engine_config()`` runs, which calls the platform's
``check_and_update_config`` (our start-up checks) and ``verify_quantization``; weights are
never loaded here. stdout (last line): JSON {id: {"ok": bool, "error": str}}.
"""

from __future__ import annotations

import json
import os
import sys


def _build(value):
    if isinstance(value, dict) and "__class__" in value:
        import importlib

        module, _, cls = value["__class__"].rpartition(".")
        fields = {k: v for k, v in value.items() if k != "__class__"}
        return getattr(importlib.import_module(module), cls)(**fields)
    return value


def main() -> None:
    from vllm.engine.arg_utils import EngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cases = json.load(sys.stdin)
    model = sys.argv[1]
    base = ["--model", model, "--dtype", "float32", "--max-model-len", "512", "--enforce-eager"]
    results = {}
    for case in cases:
        saved = {k: os.environ.get(k) for k in case["env"]}
        os.environ.update(case["env"])
        try:
            parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
            args = parser.parse_args(base + case["argv"])
            engine_args = EngineArgs.from_cli_args(args)
            for name, value in case.get("kwargs", {}).items():
                setattr(engine_args, name, _build(value))
            engine_args.create_engine_config()
            results[case["id"]] = {"ok": True, "error": ""}
        except (Exception, SystemExit) as exc:  # the message is what the test judges
            results[case["id"]] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    print(json.dumps(results))


if __name__ == "__main__":
    main()
