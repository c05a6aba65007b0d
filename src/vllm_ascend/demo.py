# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""`vllm-ascend demo`: serve SmolLM2-135M-Instruct through the plugin and ask it one question.

Starts vLLM's OpenAI-compatible server as users type it, ``vllm serve <model> ...`` (the ``vllm``
console script that vLLM's distribution installs next to this interpreter), on 127.0.0.1 in
CPU emulation (``VLLM_ASCEND_EMULATE=1``), waits for ``GET /health``, asks the question through
the ``openai`` SDK chat API, prints the answer and stops the server. ``VLLM_TARGET_DEVICE`` is
removed from the server's environment: it would bypass platform plugins.

``--ask-only --base-url URL`` asks a server that is already running.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from vllm_ascend import demo_model
from vllm_ascend.ports import free_port

DEFAULT_QUESTION = "What is the capital of France?"
SERVED_NAME = "SmolLM2-135M-Instruct"


def _log(msg: str) -> None:
    print(f"[demo] {msg}", file=sys.stderr, flush=True)


def vllm_console_script() -> str:
    """The ``vllm`` console script of this environment (``[project.scripts]`` of vLLM's ``vllm``
    distribution, installed in the same ``bin/`` as this interpreter).

    Raises:
        RuntimeError: there is none, naming what to install.
    """
    script = Path(sys.executable).parent / "vllm"
    if not script.is_file():
        raise RuntimeError(
            f"no `vllm` console script next to {sys.executable}: install vLLM as the `vllm` "
            "distribution (on Ascend hosts built from its sdist with VLLM_TARGET_DEVICE=empty; "
            "here scripts/bootstrap.sh does it)")
    return str(script)


def server_command(model: str, port: int, extra: list[str]) -> list[str]:
    """The ``vllm serve`` command line (float32, 1024-token context, eager)."""
    return [vllm_console_script(), "serve", model, "--served-model-name", SERVED_NAME,
            "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--max-model-len", "1024",
            "--gpu-memory-utilization", "0.5", "--enforce-eager",
            "--shutdown-timeout", "10", *extra]  # drain, not abort, on SIGINT


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VLLM_TARGET_DEVICE", None)
    env["VLLM_ASCEND_EMULATE"] = "1"
    env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
    env["HF_HUB_OFFLINE"] = "1"
    env.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP workers crawl on a busy box
    return env


def wait_healthy(base: str, proc: subprocess.Popen | None, timeout_s: float) -> None:
    """Poll ``{base}/health`` until 200.

    Raises:
        RuntimeError: the server process exited, or ``timeout_s`` passed.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the vLLM server exited with code {proc.returncode} before "
                               "becoming healthy (see its log)")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(2)
    raise RuntimeError(f"the vLLM server was not healthy within {timeout_s:.0f}s")


def ask(base_url: str, question: str, max_tokens: int) -> str:
    """Ask ``question`` through the openai SDK chat API (greedy) and return the answer text."""
    from openai import OpenAI

    client = OpenAI(base_url=f"{base_url}/v1", api_key="EMPTY")
    model = client.models.list().data[0].id
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": question}],
        max_tokens=max_tokens, temperature=0.0)
    return (reply.choices[0].message.content or "").strip()


def stop(proc: subprocess.Popen) -> None:
    """SIGINT the server (graceful shutdown), then SIGKILL after 30 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vllm-ascend demo", description=__doc__.split("\n")[0])
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--port", type=int, default=0, help="0: pick a free port")
    parser.add_argument("--startup-timeout", type=float, default=900.0, help="seconds")
    parser.add_argument("--ask-only", action="store_true", help="do not start a server")
    parser.add_argument("--base-url", default=None, help="server to ask with --ask-only")
    args, server_extra = parser.parse_known_args(argv)

    if args.ask_only:
        if not args.base_url:
            parser.error("--ask-only needs --base-url (e.g. http://127.0.0.1:8000)")
        print(ask(args.base_url.rstrip("/"), args.question, args.max_tokens))
        return 0

    model = str(demo_model.prepare())
    port = args.port or free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = server_command(model, port, server_extra)
    log_path = demo_model.cache_root() / "demo-server.log"
    _log("starting: VLLM_ASCEND_EMULATE=1 vllm " + " ".join(cmd[1:]))
    _log(f"server log: {log_path} (start-up takes about a minute or two on 2 cores)")
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, env=server_env(), stdout=log_file, stderr=subprocess.STDOUT)
        try:
            t0 = time.monotonic()
            wait_healthy(base, proc, args.startup_timeout)
            _log(f"server healthy after {time.monotonic() - t0:.0f}s; asking: {args.question}")
            answer = ask(base, args.question, args.max_tokens)
            print(f"Q: {args.question}\nA: {answer}", flush=True)
        except Exception as exc:
            _log(f"error: {type(exc).__name__}: {exc}")
            _log(f"last lines of {log_path}:")
            sys.stderr.write("".join(log_path.read_text(errors="replace").splitlines(True)[-60:]))
            return 1
        finally:
            _log("stopping the server")
            stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
