# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The port a test server, the demo and the serving benchmarks start on (``vllm_ascend.ports``).

A kernel-chosen ``bind(0)`` port lies in the ephemeral range, which outgoing connections and
vLLM's own sockets draw from too: a CI run once lost two server tests to ``EADDRINUSE``.
"""

from __future__ import annotations

import socket
import sys
import textwrap

import pytest
import test_server_helpers as helpers

from vllm_ascend import ports


def test_free_port_is_below_the_ephemeral_range_and_bindable():
    span = ports.ephemeral_range()
    if span is None:
        pytest.skip("no /proc/sys/net/ipv4/ip_local_port_range on this system")
    for _ in range(20):
        port = ports.free_port()
        assert 1024 <= port < span[0]
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_free_port_skips_a_port_that_is_taken(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (taken + 1, 65535))
        monkeypatch.setattr(ports, "_WINDOW", 2)
        monkeypatch.setattr(ports, "_TRIES", 2)
        # the window holds the taken port and the one below it
        picks = {ports.free_port() for _ in range(5)}
        assert taken not in picks
        if ports._bindable(taken - 1):
            assert picks == {taken - 1}


def test_free_port_falls_back_to_the_kernel_where_the_range_is_unknown(monkeypatch, tmp_path):
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "missing")
    assert ports.ephemeral_range() is None
    port = ports.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


# A stand-in server: the first start reports the port taken and exits 1 (the text vLLM's
# ``sock.bind`` raises), the second serves ``GET /health`` with 200 on the given port.
_FAKE_SERVER = textwrap.dedent("""
    import http.server, pathlib, sys
    marker, port = pathlib.Path(sys.argv[1]), int(sys.argv[sys.argv.index("--port") + 1])
    if not marker.exists():
        marker.write_text("started once")
        print("OSError: [Errno 98] Address already in use", flush=True)
        sys.exit(1)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
""")


def test_server_starts_again_on_a_new_port_when_its_port_was_taken(monkeypatch, tmp_path):
    marker = tmp_path / "marker"
    monkeypatch.setattr(helpers, "server_cmd", lambda model, port, *extra:
                        [sys.executable, "-c", _FAKE_SERVER, str(marker), "--port", str(port)])
    srv = helpers.Server("unused", tmp_path / "server.log", {}, timeout=60)
    try:
        assert marker.exists()
        assert srv.proc.poll() is None
        assert "Address already in use" not in srv.log  # the log is the second start's
    finally:
        srv.close()


def test_server_does_not_retry_any_other_exit(monkeypatch, tmp_path):
    monkeypatch.setattr(helpers, "server_cmd", lambda model, port, *extra:
                        [sys.executable, "-c", "import sys; print('bad flag'); sys.exit(2)"])
    with pytest.raises(RuntimeError, match="server exited with 2"):
        helpers.Server("unused", tmp_path / "server.log", {}, timeout=60)
