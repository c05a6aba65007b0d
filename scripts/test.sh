#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# README command (b): set up (reusing .venv when it is current), then every package's nox session
# and the end-to-end tests. Extra arguments go to nox (e.g. -s "tests(ascend-ops)").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
cd "$ROOT"
START=$(date +%s)
bash scripts/bootstrap.sh
unset VLLM_TARGET_DEVICE  # it would bypass vLLM's platform plugins
export HF_HUB_OFFLINE=1
rc=0
"$VENV/bin/nox" --no-color -f noxfile.py "$@" || rc=$?
echo "[test.sh] nox exit code $rc after $(( $(date +%s) - START ))s"
exit $rc
