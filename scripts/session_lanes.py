# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Deal the default nox sessions that run on one core into two lanes for ``scripts/test.sh``.

Reads ``nox -l --json`` on stdin and prints two lines, each a tab-separated list of session
names: the sessions of one lane, in the noxfile's order. Left out (printed on neither line):
the sessions named in ``--after``, which spread their own work over the cores and run after
both lanes (README.md, "The two commands"). Sessions are dealt longest first to the lane with less recorded time
(:data:`SECONDS`, from a ``.ci/run`` log; a session not listed counts :data:`DEFAULT_S`).

Usage: ``nox -f noxfile.py -l --json | python scripts/session_lanes.py --after e2e npu_coverage``
"""

from __future__ import annotations

import argparse
import json
import sys

#: seconds per session in a clean-clone ``.ci/run`` on the 2-core box (one session at a time)
SECONDS = {
    "lint": 10, "hygiene": 17, "typecheck": 21,
    "tests(ascend-attention)": 25, "tests(ascend-comm)": 35, "tests(ascend-graph)": 21,
    "tests(ascend-models)": 49, "tests(ascend-ops)": 120, "tests(ascend-platform)": 180,
}
DEFAULT_S = 60


def lanes(sessions: list[str], after: set[str]) -> tuple[list[str], list[str]]:
    """Two lanes of ``sessions`` (minus ``after``) with about equal recorded time, each in the
    order the sessions were given."""
    todo = [s for s in sessions if s not in after]
    chosen: tuple[list[str], list[str]] = ([], [])
    load = [0, 0]
    for name in sorted(todo, key=lambda s: -SECONDS.get(s, DEFAULT_S)):
        lane = 0 if load[0] <= load[1] else 1
        chosen[lane].append(name)
        load[lane] += SECONDS.get(name, DEFAULT_S)
    order = {s: i for i, s in enumerate(todo)}
    return tuple(sorted(lane, key=order.__getitem__) for lane in chosen)  # type: ignore[return-value]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", nargs="*", default=[], help="sessions left out of the lanes")
    args = parser.parse_args()
    listed = json.load(sys.stdin)
    names = [s["session"] for s in listed]
    for lane in lanes(names, set(args.after)):
        print("\t".join(lane))
    return 0


if __name__ == "__main__":
    sys.exit(main())
