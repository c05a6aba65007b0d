# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Coverage of the NPU branch: which torch_npu / torch.npu call sites the simulated tests ran.

Usage: ``python scripts/npu_coverage.py DUMP_DIR [--root ROOT] [--min 100]``

Every call site in the source is listed by ``ascend_ops.simulator.static_call_sites(ROOT)``
(``{(file, line): callee}``: calls of ``torch_npu.X``, ``torch_npu().X``, ``torch.npu.X`` and our
NPU modules (``ascend_ops/npu/*.py``, ``device/_npu.py``) as ``<name>.X`` under
``packages/*/src``). The simulated-NPU test processes write what they executed
(``simulator.call_sites()``, ``{(file, line): calls}``) as JSON files into DUMP_DIR:
``{"pid": int, "sites": [[file, line, calls], ...]}``. A site counts as covered when any dump
holds it with calls > 0. A site that static analysis finds only as part of a
multi-line call is matched on the call's line span (the runtime reports the line the frame is
executing, which Python gives as the line of the called attribute).

Prints a table (covered / total per file) and the missed sites; exit code 1 when the covered
share is below ``--min`` percent (default 100), or when DUMP_DIR holds no dump at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_dumps(folder: Path) -> tuple[set[tuple[str, int]], int]:
    """Union of executed ``(file, line)`` sites over the dumps in ``folder``, and the dump count.

    Raises:
        ValueError: a dump is not in the documented format (names the file).
    """
    seen: set[tuple[str, int]] = set()
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in files:
        try:
            data = json.loads(path.read_text())
            for file, line, calls in data["sites"]:
                if int(calls) > 0:
                    seen.add((str(file), int(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} is not a call-site dump ({{'sites': [[file, line, calls]]}}):"
                             f" {exc}") from exc
    return seen, len(files)


def coverage(static: dict[tuple[str, int], str], seen: set[tuple[str, int]]):
    """Split ``static`` into (covered, missed) lists of ``(file, line, callee)``."""
    covered, missed = [], []
    for (file, line), callee in sorted(static.items()):
        (covered if (file, line) in seen else missed).append((file, line, callee))
    return covered, missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump_dir", type=Path, help="folder of call-site dumps (JSON)")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: %(default)s)")
    parser.add_argument("--min", type=float, default=100.0, help="required percent (default: 100)")
    args = parser.parse_args(argv)

    from ascend_ops.simulator import static_call_sites

    static = static_call_sites(args.root)
    seen, dumps = load_dumps(args.dump_dir)
    if dumps == 0:
        print(f"npu_coverage: no call-site dumps in {args.dump_dir}: did the simulated tests run "
              "with ASCEND_OPS_SIM_CALLSITES_DIR set?")
        return 1
    covered, missed = coverage(static, seen)
    per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for file, _, _ in covered:
        per_file[file][0] += 1
    for file, _, _ in missed:
        per_file[file][1] += 1
    width = max((len(f) for f in per_file), default=10)
    print(f"{'file':<{width}}  covered / sites")
    for file, (c, m) in sorted(per_file.items()):
        print(f"{file:<{width}}  {c:>7} / {c + m}")
    total = len(covered) + len(missed)
    share = 100.0 * len(covered) / total if total else 100.0
    print(f"NPU call sites executed by the simulated tests: {len(covered)}/{total} "
          f"({share:.1f} %) from {dumps} process dumps")
    if missed:
        print("missed:")
        for file, line, callee in missed:
            print(f"  {file}:{line}  {callee}")
    if share < args.min:
        print(f"npu_coverage: FAILED, {share:.1f} % < {args.min:.1f} % required")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
