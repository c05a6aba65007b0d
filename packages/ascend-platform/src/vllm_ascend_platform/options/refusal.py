# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The one refusal type: a requested option or feature the Ascend platform does not serve.

Every start-up refusal (the feature list in ``features.py``, the refused rows of the option table
in ``support.py``, the early ``EngineArgs`` checks in ``guards.py``) is a :class:`Refusal`, and
all of them are raised together by :func:`raise_refused`, so one start-up names every problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class UnsupportedFeatureError(NotImplementedError):
    """The configuration asks for a feature the Ascend plugin has not built."""


@dataclass(frozen=True)
class Refusal:
    """One refused feature or option.

    Attributes:
        feature: what is refused, as the user spells it (``"--kv-cache-dtype / kv_cache_dtype"``).
        requested: called with the vLLM config (or ``EngineArgs``) and the ``AscendConfig`` (or
            None before it exists); True when the configuration asks for the feature.
        fix: what the user should change.
    """

    feature: str
    requested: Callable[[Any, Any], bool]
    fix: str


def raise_refused(refused: list[Refusal]) -> None:
    """Raise one error listing each refusal and its fix (no-op when the list is empty).

    Raises:
        UnsupportedFeatureError: naming every refused feature and what to change.
    """
    if refused:
        lines = [f"- {r.feature}: {r.fix}" for r in refused]
        raise UnsupportedFeatureError(
            "vllm-ascend does not support these requested features yet:\n" + "\n".join(lines)
        )
