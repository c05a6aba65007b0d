# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Faults: a TP worker killed mid-request makes the engine fail loudly, never hang.

Setup: a child process (this file run as a script) starts ``LLM(tensor_parallel_size=2)`` on a
tiny random-weight Qwen3 (``tiny_qwen3.py``) with vLLM's default engine layout: the engine core
in its own process (``VLLM_ENABLE_V1_MULTIPROCESSING`` unset) and vLLM's multiprocessing executor
starting one worker process per TP rank (titles ``VLLM::Worker_TP0`` / ``VLLM::Worker_TP1``).
The child prints ``ENGINE_READY``, adds one long greedy request (``ignore_eos``, far more tokens
than can be decoded before the kill) and drives ``LLMEngine.step()`` itself (the loop
``LLM.generate`` runs) so it can print ``DECODING`` once the first decode step has returned:
from then on every step is a TP=2 forward pass with gloo all-reduces between the two workers.

Fault: on ``DECODING`` the test SIGKILLs one worker, once per case (a fresh engine each):

- ``kill-tp1``: the non-output rank. The executor waits on TP0's reply while TP0 is inside or
  entering a gloo all-reduce with a dead peer.
- ``kill-tp0``: the output rank (``MultiprocExecutor.output_rank``). The executor waits on the
  dead rank's reply queue while TP1 is left in a collective.

Expected (vLLM's own contract, ``vllm/v1/executor/multiproc_executor.py``: the executor's
``MultiprocWorkerMonitor`` logs ``Worker proc VllmWorker-<rank> died unexpectedly``, shuts the
executor down, which cancels its pending reply reads, and fails the engine core; the client then
raises ``EngineDeadError``):

- the child's ``step()`` raises ``vllm.v1.engine.exceptions.EngineDeadError`` (printed as
  ``ENGINE_ERROR <class>: <message>`` and re-raised), the log names ``VllmWorker-<rank>`` as
  the dead worker, and the child exits non-zero within ``FAIL_GUARD_S`` of the kill (if not,
  the test kills the child's process group and fails as a hang);
- every process under the child at ``ENGINE_READY`` (engine core, both workers,
  multiprocessing's resource tracker) is gone within ``ORPHAN_GRACE_S`` of the child's exit.

Not asserted, because it depends on where the survivor is when its peer dies: in the runs so far
the surviving rank's all-reduce failed with our ``CollectiveError`` naming group ``tp:0``
(``vllm_ascend_comm.communicator``); a survivor caught between steps instead sees its RPC queue
cancelled by the executor's shutdown. Either way the engine fails the same way. The survivor
holds a lost-peer error back for ``PEER_LOST_GRACE_S`` so that the executor's monitor, not the
survivor's reply, is what fails the engine and names the dead worker (without the wait, a
``kill-tp1`` run once failed the engine with the survivor's "Connection reset by peer" first).

Measured on the 2-core box: the child exits about 4-8 s after the kill (the survivor's grace
included); each case takes about 20 s alone, mostly the TP=2 engine start-up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

FAIL_GUARD_S = 120
"""Seconds after the kill within which the child must have exited with the error."""

STARTUP_S = 420
"""Seconds allowed for engine start-up on a 2-core CI box (model load, profiling, KV cache)."""

DECODE_GUARD_S = 120
"""Seconds a started engine may take to print ``DECODING``."""

ORPHAN_GRACE_S = 15
"""Seconds after the child's exit for its former descendants to be gone."""

MAX_TOKENS = 1000
"""Tokens requested: far more than fit in the time between ``DECODING`` and the kill."""

PROMPT = [1, 504, 3458, 314, 4536]


# --------------------------------------------------------------------------- child process side

def _child_main(model: str) -> None:
    from _parallel_engines import _child_env

    _child_env()
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=model, dtype="float32", max_model_len=MAX_TOKENS + 24, enforce_eager=True,
              gpu_memory_utilization=0.5, seed=0, max_num_seqs=4, tensor_parallel_size=2)
    print("ENGINE_READY", flush=True)
    engine = llm.llm_engine
    params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    engine.add_request("long-0", TokensPrompt(prompt_token_ids=PROMPT), params)
    announced = False
    try:
        while engine.has_unfinished_requests():
            for out in engine.step():
                if not announced and len(out.outputs[0].token_ids) >= 2:
                    print(f"DECODING {len(out.outputs[0].token_ids)}", flush=True)
                    announced = True
    except Exception as e:
        print(f"ENGINE_ERROR {type(e).__module__}.{type(e).__qualname__}: {e}", flush=True)
        raise
    print("GENERATE_DONE", flush=True)


# --------------------------------------------------------------------------- test side

def _spawn(args: list[str], log_path: str) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # conftest sets 0; default: engine-core process
    with open(log_path, "w") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, os.path.abspath(__file__), *args], stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _read(log: str) -> str:
    with open(log) as f:
        return f.read()


def _wait_for(proc: subprocess.Popen, log: str, marker: str, limit_s: float) -> None:
    """Wait until ``marker`` is in the log; fail if the child exits or ``limit_s`` passes."""
    deadline = time.monotonic() + limit_s
    while marker not in _read(log):
        if proc.poll() is not None:
            pytest.fail(f"child exited ({proc.returncode}) before {marker}; log tail:\n"
                        f"{_read(log)[-4000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {marker} within {limit_s} s; log tail:\n{_read(log)[-4000:]}")
        time.sleep(0.2)


def _alive(p) -> bool:
    import psutil

    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _describe(p) -> str:
    try:
        return f"{p.pid} {' '.join(p.cmdline())[:80]!r}"
    except Exception:  # gone meanwhile
        return str(p.pid)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    from tiny_qwen3 import save_tiny_qwen3

    return save_tiny_qwen3(tmp_path_factory.mktemp("tiny_qwen3"),
                           max_position_embeddings=MAX_TOKENS + 24)


@pytest.mark.parametrize("rank", [1, 0], ids=["kill-tp1", "kill-tp0"])
def test_killed_tp_worker_fails_engine_loudly(tiny_model, tmp_path, rank):
    import psutil

    log = str(tmp_path / "child.log")
    proc = _spawn([tiny_model], log)
    try:
        _wait_for(proc, log, "ENGINE_READY", STARTUP_S)
        tree = psutil.Process(proc.pid).children(recursive=True)
        workers = {}
        for p in tree:
            title = " ".join(p.cmdline())
            for r in (0, 1):
                if f"Worker_TP{r}" in title:
                    workers[r] = p
        assert sorted(workers) == [0, 1], [_describe(p) for p in tree]
        print("processes under the child:", [_describe(p) for p in tree])

        _wait_for(proc, log, "DECODING", DECODE_GUARD_S)
        victim = workers[rank]
        os.kill(victim.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        try:
            proc.wait(timeout=FAIL_GUARD_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"engine still running {FAIL_GUARD_S} s after worker TP{rank} was killed "
                        f"(hang); log tail:\n{_read(log)[-4000:]}")
        to_exit = time.monotonic() - killed_at
        text = _read(log)
        print(f"child exited {proc.returncode} {to_exit:.1f} s after the kill")

        assert "GENERATE_DONE" not in text, "request finished before the kill: raise MAX_TOKENS"
        assert proc.returncode != 0, text[-4000:]
        assert "ENGINE_ERROR vllm.v1.engine.exceptions.EngineDeadError" in text, text[-4000:]
        assert f"Worker proc VllmWorker-{rank} died unexpectedly" in text, text[-4000:]

        deadline = time.monotonic() + ORPHAN_GRACE_S
        while any(_alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [_describe(p) for p in tree if _alive(p)]
        assert not left, f"processes left running after the engine failed: {left}"
    finally:  # never leak engine processes: they all share the child's process group
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


if __name__ == "__main__":
    _child_main(sys.argv[1])
