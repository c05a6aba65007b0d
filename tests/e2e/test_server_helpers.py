# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Helpers for the end-to-end front-door tests (no tests here).

Starts vLLM's OpenAI server as users type it, ``vllm serve <model> ...`` (the ``vllm`` console
script of this environment: vllm_ascend.demo.vllm_console_script), in CPU emulation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from vllm_ascend import ports
from vllm_ascend.demo import vllm_console_script

PORT_TAKEN = "Address already in use"  # the OSError text of EADDRINUSE in the server log


def demo_model_path() -> str:
    """The SmolLM2 checkpoint from ``vllm-ascend prepare-demo-model`` (converted once, cached)."""
    proc = subprocess.run([sys.executable, "-m", "vllm_ascend.cli", "prepare-demo-model"],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"prepare-demo-model failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def emulation_env(**over: str | None) -> dict[str, str]:
    """The test environment: emulation on, a small emulated device, no stray plugin settings."""
    # VLLM_ASCEND_SKIP_VERSION_CHECK is the caller's choice (e.g. a vLLM version the pins do not
    # list yet, docs/model-runner-v2.md) and passes through
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VLLM_ASCEND", "VLLM_PLUGINS", "VLLM_TARGET_DEVICE"))
           or k == "VLLM_ASCEND_SKIP_VERSION_CHECK"}
    env.update(VLLM_ASCEND_EMULATE="1", VLLM_ASCEND_EMULATE_DEVICE_MEMORY="4GiB",
               OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "2"), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    for key, value in over.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def vllm_serve(model: str, *args: str) -> list[str]:
    """``vllm serve <model> <args>`` as a command line."""
    return [vllm_console_script(), "serve", model, *args]


def server_cmd(model: str, port: int, *extra: str) -> list[str]:
    return vllm_serve(model, "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512",
                      "--dtype", "float32", *extra)


class Server:
    """A running OpenAI server; ``log`` holds its combined output."""

    def __init__(self, model: str, log_path: Path, env: dict[str, str], *extra: str,
                 timeout: float = 600):
        self.log_path = log_path
        deadline = time.monotonic() + timeout
        # Another process may still bind the port between ports.free_port() and the server's bind:
        # start again on a new port then (twice at most); any other exit is the test's failure.
        for _ in range(3):
            self._start(model, env, extra)
            if self._wait_healthy(deadline):
                return
            if self.proc.poll() is None or PORT_TAKEN not in self.log:
                break
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log[-4000:]}")
        self.close()
        raise TimeoutError(f"server not healthy after {timeout}s:\n{self.log[-4000:]}")

    def _start(self, model: str, env: dict[str, str], extra: tuple[str, ...]) -> None:
        self.port = ports.free_port()  # below the ephemeral range: see its docstring
        self.url = f"http://127.0.0.1:{self.port}"
        self._log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(server_cmd(model, self.port, *extra), env=env,
                                     stdout=self._log_file, stderr=subprocess.STDOUT)

    def _wait_healthy(self, deadline: float) -> bool:
        """True once ``/health`` answers 200; False if the server exits or the deadline passes."""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.close()
                return False
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(2)
        return False

    @property
    def log(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log_path.read_text(errors="replace")

    def client(self, timeout: float = 300):
        """An ``openai.OpenAI`` client of this server (no retries: a failure shows at once)."""
        import openai

        return openai.OpenAI(base_url=f"{self.url}/v1", api_key="unused", max_retries=0,
                             timeout=timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()


def run_to_exit(cmd: list[str], env: dict[str, str], timeout: float = 300):
    """Run a command that should exit by itself; return (returncode, combined output)."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr
