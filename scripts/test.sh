#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# README command (b): set up (reusing .venv when it is current), then every package's nox session
# and the end-to-end tests. Extra arguments go to nox (e.g. -s "tests(ascend-ops)") and run it
# as given. Without arguments the one-core sessions (lint, hygiene, typecheck, each package's
# tests) run in two lanes at once, one per core: `nox -t lane-1` and `nox -t lane-2` (the tags
# are set in noxfile.py), each lane's log printed when it ends; then e2e, npu_coverage and release, which share the cores out themselves.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
cd "$ROOT"
START=$(date +%s)
bash scripts/bootstrap.sh
unset VLLM_TARGET_DEVICE  # it would bypass vLLM's platform plugins
export HF_HUB_OFFLINE=1
rc=0
NOX=("$VENV/bin/nox" --no-color -f noxfile.py)
if [ $# -gt 0 ]; then
  "${NOX[@]}" "$@" || rc=$?
else
  AFTER=(e2e npu_coverage release)
  LOGS="$ROOT/.nox/lanes"
  mkdir -p "$LOGS"
  pids=()
  for i in 1 2; do
    echo "[test.sh] lane $i: $("${NOX[@]}" -l -t "lane-$i" 2>/dev/null | awk '/^\* / {printf "%s ", $2}')"
    # one OpenMP thread per lane unless set: a core each
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "${NOX[@]}" -t "lane-$i" > "$LOGS/lane-$i.log" 2>&1 &
    pids+=("$i:$!")
  done
  for entry in "${pids[@]}"; do
    i=${entry%%:*}
    lane_rc=0
    wait "${entry#*:}" || lane_rc=$?
    echo "[test.sh] ===== lane $i: exit $lane_rc after $(( $(date +%s) - START ))s; its log follows ====="
    cat "$LOGS/lane-$i.log"
    [ $lane_rc -eq 0 ] || rc=$lane_rc
  done
  "${NOX[@]}" -s "${AFTER[@]}" || rc=$?
fi
echo "[test.sh] nox exit code $rc after $(( $(date +%s) - START ))s"
exit $rc
