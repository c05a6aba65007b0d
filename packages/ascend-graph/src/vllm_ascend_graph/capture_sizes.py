# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACL graph capture sizes: validated, capped and fitted to the graph budget.

Pure functions on plain ints so they can be tested without vLLM. The rules:

1. every size is a positive ``int`` (``TypeError`` / ``ValueError`` otherwise);
2. sorted ascending, duplicates removed;
3. sizes above ``max_num_seqs * decode_query_len`` (the largest uniform-decode batch,
   in tokens) or above ``max_num_batched_tokens`` are dropped -- a graph for a batch
   the scheduler never forms only costs device streams;
4. the number of graphs is ``graphs_per_size * len(sizes)``; over the budget the list
   is pruned to ``budget // graphs_per_size`` sizes, always keeping the smallest and
   the largest (so every batch up to the largest still pads into a graph) and spreading
   the rest evenly by list position (index ``i * (n - 1) / (k - 1)``, halves rounded up); the
   caller logs a warning with the kept list;
5. nothing left (all sizes over the limits, or a budget below one size's graphs) raises
   ``ValueError`` naming what to change -- never a crash at capture time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class CaptureSizePlan:
    """Result of :func:`plan_capture_sizes`.

    Attributes:
        sizes: final capture sizes in tokens, ascending, unique.
        over_limit: sizes dropped by rule 3.
        pruned: sizes dropped by the budget (rule 4).
        graphs_per_size: graphs one size costs.
        budget: the graph budget applied.
    """

    sizes: list[int]
    over_limit: list[int]
    pruned: list[int]
    graphs_per_size: int
    budget: int

    @property
    def num_graphs(self) -> int:
        return self.graphs_per_size * len(self.sizes)


def graphs_per_size(*, piecewise: bool, full: bool, num_layers: int) -> int:
    """Graphs captured for one capture size.

    Piecewise capture splits the model at every attention layer: ``num_layers + 1``
    pieces, one graph each. A full graph is one graph. FULL_AND_PIECEWISE captures both
    (an upper bound: full graphs are only captured for uniform-decode sizes).

    Raises:
        ValueError: ``num_layers`` < 0, or neither piecewise nor full.
    """
    if num_layers < 0:
        raise ValueError(f"num_layers must be >= 0, got {num_layers}.")
    if not (piecewise or full):
        raise ValueError("graphs_per_size needs piecewise or full capture (mode NONE captures nothing).")
    return (num_layers + 1 if piecewise else 0) + (1 if full else 0)


def _evenly_spaced(sizes: list[int], keep: int) -> list[int]:
    if keep >= len(sizes):
        return list(sizes)
    if keep == 1:
        return [sizes[-1]]
    last = len(sizes) - 1
    # index i * last / (keep - 1), rounded half up
    idx = sorted({(2 * i * last + keep - 1) // (2 * (keep - 1)) for i in range(keep)})
    return [sizes[i] for i in idx]


def plan_capture_sizes(
    sizes: Iterable[int],
    *,
    max_num_seqs: int,
    decode_query_len: int,
    max_num_batched_tokens: int,
    graphs_per_size: int,
    budget: int,
) -> CaptureSizePlan:
    """Validate and fit capture sizes (module docstring, rules 1-5).

    Args:
        sizes: requested capture sizes in tokens (any order, duplicates allowed).
        max_num_seqs: scheduler's request limit per step.
        decode_query_len: tokens per request in a uniform decode step (1 + speculative
            tokens).
        max_num_batched_tokens: scheduler's token limit per step.
        graphs_per_size: from :func:`graphs_per_size`.
        budget: most graphs to capture (>= 1).

    Raises:
        TypeError: a size is not an int (bools are refused too).
        ValueError: a size < 1; an empty list; nothing left after the limits; a budget
            too small for one size.
    """
    raw = list(sizes)
    for s in raw:
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(
                f"cudagraph_capture_sizes must hold ints, got {s!r} ({type(s).__name__})."
            )
        if s < 1:
            raise ValueError(f"cudagraph_capture_sizes must be >= 1, got {s}.")
    if not raw:
        raise ValueError(
            "cudagraph_capture_sizes is empty while ACL graph mode is on; give at least one "
            "size (e.g. [1, 2, 4, 8]) or set enforce_eager=True / cudagraph_mode NONE."
        )
    if budget < 1 or graphs_per_size < 1:
        raise ValueError(f"budget and graphs_per_size must be >= 1 (got {budget}, {graphs_per_size}).")
    limit = min(max_num_seqs * decode_query_len, max_num_batched_tokens)
    unique = sorted(set(raw))
    kept = [s for s in unique if s <= limit]
    over = [s for s in unique if s > limit]
    if not kept:
        raise ValueError(
            f"every cudagraph_capture_size {unique} exceeds the largest batch the scheduler "
            f"forms ({limit} tokens = min(max_num_seqs {max_num_seqs} x decode query length "
            f"{decode_query_len}, max_num_batched_tokens {max_num_batched_tokens})); "
            f"give sizes <= {limit} or raise max_num_seqs."
        )
    max_sizes = budget // graphs_per_size
    if max_sizes < 1:
        raise ValueError(
            f"graph budget {budget} is below the {graphs_per_size} graphs one capture size "
            "needs in this mode; raise additional_config['ascend_compilation_config']"
            "['graph_budget'], use cudagraph_mode FULL_DECODE_ONLY (one graph per size), "
            "or run with enforce_eager=True."
        )
    final = _evenly_spaced(kept, max_sizes)
    pruned = [s for s in kept if s not in final]
    return CaptureSizePlan(final, over, pruned, graphs_per_size, budget)
