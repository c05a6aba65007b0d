#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# README command (a): set up, convert SmolLM2-135M-Instruct, serve it with vLLM's OpenAI server
# through the Ascend plugin in CPU emulation on 127.0.0.1, ask "What is the capital of France?"
# with the openai SDK, print the answer, stop the server.
# Extra arguments go to `vllm-ascend demo` (e.g. --question "..."); --no-bootstrap skips set-up.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
if [[ "${1:-}" == "--no-bootstrap" ]]; then shift; else bash "$ROOT/scripts/bootstrap.sh"; fi
unset VLLM_TARGET_DEVICE  # it would bypass vLLM's platform plugins
export VLLM_ASCEND_EMULATE=1 HF_HUB_OFFLINE=1
"$VENV/bin/vllm-ascend" prepare-demo-model
exec "$VENV/bin/vllm-ascend" demo "$@"
