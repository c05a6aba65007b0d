# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""`vllm-ascend` command line: doctor, prepare-demo-model, demo."""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand -> (module, help); each module has main(argv: list[str]) -> int
_COMMANDS = {
    "doctor": ("vllm_ascend_platform.doctor", "report mode, devices, versions and plugin state"),
    "prepare-demo-model": ("vllm_ascend.demo_model", "convert SmolLM2-135M-Instruct GGUF to safetensors"),
    "demo": ("vllm_ascend.demo", "serve SmolLM2 in emulation and ask it a question"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="vllm-ascend", description=__doc__)
    parser.add_argument("command", choices=sorted(_COMMANDS), help="; ".join(
        f"{name}: {text}" for name, (_, text) in sorted(_COMMANDS.items())))
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    args, rest = parser.parse_known_args(argv[:1])
    module = importlib.import_module(_COMMANDS[args.command][0])
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
