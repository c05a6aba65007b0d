# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The start-up log line: through ``vllm.ascend`` once vLLM configured logging, else to stderr."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

logger = logging.getLogger("vllm.ascend")


def log(level: int, msg: str, *args: Any) -> None:
    """Log through ``vllm.ascend``; before vLLM has configured logging, write to stderr.

    vLLM 0.32 configures its ``vllm`` logger lazily (``configure_logging_from_args``,
    engine start-up), often after the platform plugin ran; an INFO record would then be
    dropped by Python's last-resort handler, so the line is written directly instead.
    """
    if logger.hasHandlers():
        logger.log(level, msg, *args)
        return
    threshold = logging.getLevelName(os.environ.get("VLLM_LOGGING_LEVEL", "INFO").upper())
    if level >= (threshold if isinstance(threshold, int) else logging.INFO):
        print(f"{logging.getLevelName(level)} {msg % args if args else msg}", file=sys.stderr)
