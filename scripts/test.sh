#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# README command (b): set up (reusing .venv when it is current), then every package's nox session
# and the end-to-end tests. Extra arguments go to nox (e.g. -s "tests(ascend-ops)") and run it
# as given. Without arguments the one-core sessions (lint, hygiene, typecheck, each package's
# tests) run in two lanes at once, one per core (scripts/session_lanes.py), each lane's log
# printed when it ends; then e2e, npu_coverage and release, which share the cores out themselves.
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
  "${NOX[@]}" -l --json 2>/dev/null > "$LOGS/sessions.json"
  mapfile -t LANES < <("$VENV/bin/python" scripts/session_lanes.py --after "${AFTER[@]}" < "$LOGS/sessions.json")
  [ ${#LANES[@]} -eq 2 ] || { echo "[test.sh] could not deal the sessions into lanes" >&2; exit 2; }
  pids=()
  for i in "${!LANES[@]}"; do
    IFS=$'\t' read -r -a names <<< "${LANES[$i]}"
    [ ${#names[@]} -gt 0 ] || continue
    echo "[test.sh] lane $((i + 1)): ${names[*]}"
    # one OpenMP thread per lane unless set: a core each
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "${NOX[@]}" -s "${names[@]}" > "$LOGS/lane-$((i + 1)).log" 2>&1 &
    pids+=("$i:$!")
  done
  for entry in "${pids[@]}"; do
    i=${entry%%:*}
    lane_rc=0
    wait "${entry#*:}" || lane_rc=$?
    echo "[test.sh] ===== lane $((i + 1)): exit $lane_rc after $(( $(date +%s) - START ))s; its log follows ====="
    cat "$LOGS/lane-$((i + 1)).log"
    [ $lane_rc -eq 0 ] || rc=$lane_rc
  done
  "${NOX[@]}" -s "${AFTER[@]}" || rc=$?
fi
echo "[test.sh] nox exit code $rc after $(( $(date +%s) - START ))s"
exit $rc
