#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# NPU smoke test for people with Ascend hardware: runs the `npu`-marked tests of every package
# and of tests/e2e, then the simulated-NPU test tier against the real torch_npu, then serves
# SmolLM2 and asks it one question, and prints a report to paste into an issue, ending with the
# checklist of what only hardware can settle (docs/hardware-checklist.md). On a machine without an NPU (CPU emulation, VLLM_ASCEND_EMULATE=1) the same
# command runs end to end: the NPU tests are listed as deselected with the reason, and the
# serve-and-ask step runs in emulation.
#
#   bash scripts/npu_smoke.sh                 # full run
#   SMOKE_SERVE=0 bash scripts/npu_smoke.sh   # skip the serve-and-ask step
#   SMOKE_SIM_TIER=1 bash scripts/npu_smoke.sh  # no NPU: run the simulated-NPU tier on the simulator
#   PYTHON=/path/to/python bash scripts/npu_smoke.sh
#
# Exit code 0 when every step passed (deselected NPU tests do not count as failures).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"
SERVE="${SMOKE_SERVE:-1}"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
unset VLLM_TARGET_DEVICE  # it would bypass vLLM's platform plugins
export HF_HUB_OFFLINE=1
log() { echo "[npu_smoke] $*" >&2; }

# ---- 1. doctor: mode, versions, devices ----------------------------------------------------------
NOTE=""
if [ -z "${VLLM_ASCEND_EMULATE:-}" ] && ! "$PYTHON" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch_npu') is None)"; then
  export VLLM_ASCEND_EMULATE=1
  NOTE="torch_npu is not installed: ran in CPU emulation (VLLM_ASCEND_EMULATE=1)"
fi
"$PYTHON" -m vllm_ascend.cli doctor --json > "$WORK/doctor.json" 2> "$WORK/doctor.err"
DOCTOR_RC=$?
"$PYTHON" -m vllm_ascend.cli doctor > "$WORK/doctor.txt" 2>&1
field() {  # field <python expression over the doctor report `r`>
  "$PYTHON" -c "import json,sys; r=json.load(open(sys.argv[1])); print($1)" "$WORK/doctor.json" \
    2>/dev/null || echo "unknown"
}
MODE="$(field "r['mode']")"
VERSIONS="$(field "', '.join(f'{k} {v or \"-\"}' for k, v in r['versions'].items()).replace('cann', 'CANN')")"
DEVICES="$(field "', '.join(r['devices']) or 'none'")"
SOC="$(field "r['soc'] or 'n/a'")"

# ---- 2. npu-marked tests ---------------------------------------------------------------------------
SUITES=()
for d in packages/*/tests tests/e2e; do
  ls "$d"/test_*.py >/dev/null 2>&1 && SUITES+=("$d")
done
if [ "$MODE" = "npu" ]; then
  REASON=""
else
  REASON="no Ascend NPU (mode=$MODE): npu-marked tests need torch_npu and a visible device"
fi
SELECTED=0; PASSED=0; FAILED=0; DESELECTED=0; TEST_LINES=()
for suite in "${SUITES[@]}"; do
  if ! grep -qE 'mark\.npu|pytest\.mark\.npu' "$suite"/*.py 2>/dev/null; then
    TEST_LINES+=("  $suite: no npu-marked tests")
  elif [ -z "$REASON" ]; then
    log "running npu tests in $suite"
    out="$("$PYTHON" -m pytest "$suite" -m npu -q -p no:cacheprovider 2>&1 | tail -n 3)"
    p=$(grep -oE '[0-9]+ passed' <<<"$out" | awk '{s+=$1} END {print s+0}')
    f=$(grep -oE '[0-9]+ (failed|errors?)' <<<"$out" | awk '{s+=$1} END {print s+0}')
    PASSED=$((PASSED + ${p:-0})); FAILED=$((FAILED + ${f:-0})); SELECTED=$((SELECTED + ${p:-0} + ${f:-0}))
    TEST_LINES+=("  $suite: ${p:-0} passed, ${f:-0} failed")
  else
    n=$("$PYTHON" -m pytest "$suite" -m npu --collect-only -q -p no:cacheprovider 2>/dev/null \
        | grep -c '::' || true)
    DESELECTED=$((DESELECTED + n))
    TEST_LINES+=("  $suite: $n deselected")
  fi
done

# ---- 2b. the simulated-NPU tier on the real torch_npu ---------------------------------------------------
# The same test files as noxfile.py's `npu_coverage` session: the ascend-ops test files that use the
# `simulated_npu` fixture or are named test_simulator*, and tests/e2e/test_simulated_npu*.py. On an
# NPU host they run with ASCEND_OPS_SIM_TIER_REAL_NPU=1 (the fixture yields the real torch_npu and
# the e2e children run without VLLM_ASCEND_SIMULATE_NPU); tests marked `sim_only` assert facts only
# the simulator has and are deselected. Without an NPU the step is skipped unless SMOKE_SIM_TIER=1,
# which runs the same files on the simulated NPU (minutes on a small CPU host; CI covers this
# through `nox -s npu_coverage`).
SIM_OPS_FILES=()
for f in packages/ascend-ops/tests/test_*.py; do
  if grep -q simulated_npu "$f" || [[ "$(basename "$f")" == test_simulator* ]]; then SIM_OPS_FILES+=("$f"); fi
done
SIM_E2E_FILES=(tests/e2e/test_simulated_npu*.py)
SIM_ONLY_REASON="sim_only: asserts a simulator-only fact (ledger counts, SimulatedNpuError refusals, simulated replays, the adversarial schedule)"
TIER_FAILED=0; TIER_LINES=()
tier_run() {  # tier_run <label> <env assignments...> -- <pytest args...>
  local label="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  log "simulated-NPU tier: $label"
  local out
  out="$(env "${envs[@]}" "$PYTHON" -m pytest "$@" -q -p no:cacheprovider -rfE 2>&1)"
  local tail_line; tail_line="$(grep -E '(passed|failed|error|skipped|deselected|no tests ran)' <<<"$out" | tail -n 1)"
  local f; f=$(grep -oE '[0-9]+ (failed|errors?)' <<<"$tail_line" | awk '{s+=$1} END {print s+0}')
  TIER_FAILED=$((TIER_FAILED + ${f:-0}))
  TIER_LINES+=("  $label: ${tail_line:-no pytest summary}")
  while IFS= read -r l; do TIER_LINES+=("    $l"); done < <(grep -E '^(FAILED|ERROR) ' <<<"$out" | head -n 20)
}
if [ "$MODE" = "npu" ]; then
  TIER_MODE="real torch_npu (ASCEND_OPS_SIM_TIER_REAL_NPU=1); deselected: $SIM_ONLY_REASON"
  tier_run "ascend-ops (${#SIM_OPS_FILES[@]} files)" ASCEND_OPS_SIM_TIER_REAL_NPU=1 -- \
    "${SIM_OPS_FILES[@]}" -m "not sim_only"
  tier_run "e2e (${#SIM_E2E_FILES[@]} files)" ASCEND_OPS_SIM_TIER_REAL_NPU=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 -- \
    "${SIM_E2E_FILES[@]}" -m "not sim_only" --timeout=1800
elif [ "${SMOKE_SIM_TIER:-0}" = "1" ]; then
  TIER_MODE="simulated NPU (no NPU here, SMOKE_SIM_TIER=1; adversarial schedule as in nox -s npu_coverage)"
  tier_run "ascend-ops (${#SIM_OPS_FILES[@]} files)" ASCEND_OPS_SIM_SCHEDULE=adversarial -- "${SIM_OPS_FILES[@]}"
  tier_run "e2e (${#SIM_E2E_FILES[@]} files)" ASCEND_OPS_SIM_SCHEDULE=adversarial VLLM_ASCEND_EMULATE=1 \
    VLLM_ENABLE_V1_MULTIPROCESSING=0 -- "${SIM_E2E_FILES[@]}" --timeout=1800
else
  TIER_MODE="skipped: no NPU (mode=$MODE); these ${#SIM_OPS_FILES[@]} + ${#SIM_E2E_FILES[@]} files need the real torch_npu and a device (SMOKE_SIM_TIER=1 runs them on the simulated NPU instead)"
fi

# ---- 3. serve and ask --------------------------------------------------------------------------------
SERVE_RESULT="skipped (SMOKE_SERVE=0)"
SERVE_OK=1
if [ "$SERVE" = "1" ]; then
  SERVE_OK=0
  MODEL="$("$PYTHON" -m vllm_ascend.cli prepare-demo-model 2>"$WORK/prepare.err" | tail -n 1)"
  PORT="$("$PYTHON" -c 'from vllm_ascend.ports import free_port; print(free_port())')"
  START=$(date +%s)
  log "serving $MODEL on 127.0.0.1:$PORT"
  EXTRA=()
  [ "$MODE" = "npu" ] || EXTRA=(--dtype float32)  # no bf16 instructions on the emulation host
  # `vllm serve` as users type it: the console script installed next to $PYTHON, else on PATH
  VLLM_BIN="$(dirname "$PYTHON")/vllm"
  [ -x "$VLLM_BIN" ] || VLLM_BIN="$(command -v vllm || echo vllm)"
  "$VLLM_BIN" serve "$MODEL" --host 127.0.0.1 \
    --port "$PORT" --max-model-len 512 --enforce-eager "${EXTRA[@]}" > "$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    "$PYTHON" -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2).status != 200)" \
      2>/dev/null && break
    sleep 2
  done
  ANSWER="$("$PYTHON" - "$PORT" "$MODEL" <<'EOF' 2>"$WORK/ask.err"
import json, sys, urllib.request
port, model = sys.argv[1], sys.argv[2]
body = {"model": model, "max_tokens": 16, "temperature": 0,
        "messages": [{"role": "user", "content": "What is the capital of France?"}]}
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                             data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
reply = json.load(urllib.request.urlopen(req, timeout=300))
print(json.dumps(reply["choices"][0]["message"]["content"]))
EOF
)"
  if [ -n "$ANSWER" ]; then
    SERVE_OK=1
    SERVE_RESULT="PASS in $(( $(date +%s) - START ))s: Q: \"What is the capital of France?\" A: $ANSWER"
  else
    SERVE_RESULT="FAIL after $(( $(date +%s) - START ))s: $(tail -n 1 "$WORK/ask.err" 2>/dev/null); server log tail:"
    SERVE_TAIL="$(grep -v 'Route:' "$WORK/server.log" | tail -n 15)"
  fi
  kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
fi

# ---- 4. report -----------------------------------------------------------------------------------------
RESULT=PASS
[ "$DOCTOR_RC" -eq 0 ] || RESULT=FAIL
[ "$FAILED" -eq 0 ] || RESULT=FAIL
[ "$SERVE_OK" -eq 1 ] || RESULT=FAIL
[ "$TIER_FAILED" -eq 0 ] || RESULT=FAIL
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT (dirty)"
echo "===== vllm-ascend NPU smoke report ====="
echo "date:       $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "commit:     $COMMIT"
echo "host:       $(uname -srm), $(nproc) cpus"
echo "mode:       $MODE"
[ -n "$NOTE" ] && echo "note:       $NOTE"
echo "soc:        $SOC"
echo "devices:    $DEVICES"
echo "versions:   $VERSIONS"
echo "doctor:     $([ "$DOCTOR_RC" -eq 0 ] && echo OK || echo "INCOMPATIBLE (exit $DOCTOR_RC)")"
if [ -z "$REASON" ]; then
  echo "npu tests:  $SELECTED selected, $PASSED passed, $FAILED failed"
else
  echo "npu tests:  0 selected, $DESELECTED deselected (reason: $REASON)"
fi
for line in "${TEST_LINES[@]}"; do echo "$line"; done
echo "sim tier:   $TIER_MODE"
for line in "${TIER_LINES[@]}"; do echo "$line"; done
echo "serve-ask:  $SERVE_RESULT"
[ -n "${SERVE_TAIL:-}" ] && sed 's/^/  | /' <<<"$SERVE_TAIL"
echo "result:     $RESULT"
echo "--- only hardware can settle (docs/hardware-checklist.md; tick what this run showed) ---"
grep -E '^- \[ \] ' docs/hardware-checklist.md 2>/dev/null | sed -E 's/^- \[ \] /  [ ] /' \
  || echo "  (docs/hardware-checklist.md not found)"
echo "--- doctor ---"
cat "$WORK/doctor.txt"
echo "===== end of report ====="
[ "$RESULT" = PASS ]
