# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A TCP port for a server that is started later by another process (demo, tests, benchmarks).

``bind(("127.0.0.1", 0))`` returns a port from the kernel's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, Linux ``ip(7)``). The kernel draws from the same
range the local port of every outgoing TCP connection and every other ``bind(0)`` (vLLM's own
``vllm.utils.network_utils.get_open_port``, its engine's ZMQ and ``torch.distributed`` sockets).
Between that check and the server's ``bind`` (seconds: the server imports vLLM first) such a
socket can take the port, and the server then exits with ``EADDRINUSE``. A port below the
ephemeral range is handed out only to a process that asks for it by number.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_WINDOW = 8192  # how far below the ephemeral range to look
_TRIES = 64


def ephemeral_range() -> tuple[int, int] | None:
    """The kernel's ephemeral port range ``(low, high)``, or None where it cannot be read."""
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return None
    return low, high


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now and, where possible, below the ephemeral range.

    Tries up to 64 random ports in the 8192 below the range's low end (never under 1024); falls
    back to a kernel-chosen ``bind(0)`` port where the range is unknown (not Linux), too low, or
    every try was taken.
    """
    span = ephemeral_range()
    if span is not None and span[0] - 1024 >= _WINDOW:
        candidates = range(span[0] - _WINDOW, span[0])
        for port in random.sample(candidates, _TRIES):
            if _bindable(port):
                return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
