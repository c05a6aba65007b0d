# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""TP=2 (multiproc and Ray executors), PP=2, DP=2 and EP=2 (also DP=2 with EP on a MoE model) in
CPU emulation give the same greedy tokens as TP=1 (NPUCommunicator/gloo).

Model: a tiny random-weight Qwen3 checkpoint made here with transformers' ``Qwen3ForCausalLM``
(float32, 4 query / 2 KV heads, 2 layers) and the SmolLM2 tokenizer (from
``vllm-ascend prepare-demo-model``; ``vocab_size`` set to match). The oracle is the TP=1 run of
the same engine: parallel layouts only change where sums are taken, so float32 greedy tokens
must be identical.

Where the engines run:

- TP, PP and EP engines run in the test process, as ``LLM(...)`` in a user's script or notebook
  does: the engine core here (conftest: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``), one worker process
  per rank started by vLLM's multiproc executor. This process has run torch work before every
  one of them (the TP=1 reference runs its model here), which is the situation that used to hang
  a forked worker in libgomp; the platform now spawns workers (docs/worker-start.md). A start-up
  that does not finish fails through the platform's bound on the workers' READY handshake
  (``VLLM_ENGINE_READY_TIMEOUT_S``, set to ``READY_TIMEOUT_S`` here), and pytest-timeout
  bounds each test as a whole.
- DP (``AsyncLLM``: one engine-core process per DP rank, as under ``vllm serve``), Ray (a local
  cluster per run: ``ray.init`` state is process-wide) and the compile-cache restart test (two
  process starts are its subject) run in child processes (``_parallel_engines.py`` run as a
  script): each child gets ``HANG_GUARD_S`` seconds after its engine is up (and a start-up
  allowance before that), then is killed and the test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from _parallel_engines import NEW_TOKENS, PROMPTS, _generate, _graph_facts

READY_TIMEOUT_S = 300
"""Bound on the workers' READY handshake for the in-process engines (``VLLM_ENGINE_READY_TIMEOUT_S``)."""

TEST_TIMEOUT_S = 900
"""pytest-timeout for a test that runs engines in this process (start-up, generation, shutdown)."""

HANG_GUARD_S = 120
"""Seconds a started engine may take to generate before the test fails (killed, never hangs)."""

STARTUP_S = 420
"""Seconds allowed for engine start-up on a 2-core CI box (model load, profiling, KV cache)."""

ENGINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_parallel_engines.py")
"""The script each child process runs."""


# --------------------------------------------------------------------------- test side

def _spawn(args: list[str], log_path: str, extra_env: dict | None = None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # conftest sets 0; DP needs the engine process
    env.update(extra_env or {})
    log = open(log_path, "w")
    return subprocess.Popen([sys.executable, ENGINES, *args], stdout=log,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_all(procs: list[tuple[subprocess.Popen, str]]) -> None:
    """Wait for every child: STARTUP_S to print ENGINE_READY, then HANG_GUARD_S to finish."""
    start = time.monotonic()
    ready_at: dict[int, float] = {}
    while True:
        now = time.monotonic()
        pending = False
        for i, (p, log) in enumerate(procs):
            if p.poll() is not None:
                continue
            pending = True
            if i not in ready_at and "ENGINE_READY" in open(log).read():
                ready_at[i] = now
            overdue = (now - ready_at[i] > HANG_GUARD_S) if i in ready_at else (now - start > STARTUP_S)
            if overdue:
                for q, _ in procs:
                    if q.poll() is None:
                        os.killpg(q.pid, 9)
                        q.wait()
                stage = "generation" if i in ready_at else "engine start-up"
                tail = open(log).read()[-3000:]
                pytest.fail(f"child {i} hung in {stage} (guard hit); log tail:\n{tail}")
        if not pending:
            break
        time.sleep(1)
    for i, (p, log) in enumerate(procs):
        if p.returncode != 0:
            pytest.fail(f"child {i} exited with {p.returncode}; log tail:\n{open(log).read()[-4000:]}")


def _run(model: str, tmp_path, name: str, tp: int = 1, pp: int = 1,
         ep: bool = False, graph: bool = False, extra_env: dict | None = None):
    out, log = str(tmp_path / f"{name}.json"), str(tmp_path / f"{name}.log")
    args = ["run", model, out, str(tp), str(pp)] + (["ep"] if ep else []) + (["graph"] if graph else [])
    # engine core in the child itself: one process start (and import) less per run
    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", **(extra_env or {})}
    _wait_all([(_spawn(args, log, env), log)])
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory) -> str:
    """A random-weight Qwen3 checkpoint (float32) with the SmolLM2 tokenizer."""
    import shutil

    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from vllm_ascend import demo_model

    tok_src = str(demo_model.prepare())
    path = tmp_path_factory.mktemp("tiny_qwen3")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_src, name), path / name)
    vocab = len(AutoTokenizer.from_pretrained(str(path)))
    cfg = Qwen3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
        tie_word_embeddings=False, torch_dtype="float32", initializer_range=0.2,
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(cfg).to(torch.float32).save_pretrained(str(path))
    return str(path)


@pytest.fixture(scope="module")
def in_process():
    """Run engines in this process: 2 GiB of emulated memory per rank (as the children get) and
    the READY bound; both restored after the module."""
    names = ("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "VLLM_ENGINE_READY_TIMEOUT_S")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = "2GiB"
    os.environ["VLLM_ENGINE_READY_TIMEOUT_S"] = str(READY_TIMEOUT_S)
    assert os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0", "conftest sets it"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _worker_procs() -> list:
    """This process's vLLM worker processes (vLLM titles them ``VLLM::Worker...``)."""
    import psutil

    procs = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "VLLM::Worker" in " ".join(p.cmdline()) and p.status() != psutil.STATUS_ZOMBIE:
                procs.append(p)
        except psutil.NoSuchProcess:
            pass
    return procs


@pytest.fixture(scope="module")
def reference(tiny_qwen3, in_process) -> list[list[int]]:
    """TP=1 tokens, computed in this process (so every later engine starts after torch work)."""
    tokens = _generate(tiny_qwen3, PROMPTS)
    assert len(tokens) == len(PROMPTS) and all(len(t) == NEW_TOKENS for t in tokens)
    return tokens


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_tp2_matches_tp1_after_hf_generate_and_in_a_second_engine(tiny_qwen3, reference):
    """TP=2 gives the TP=1 tokens, in the sequence that used to hang: HF transformers
    ``generate`` in this process (torch's OpenMP pool runs parallel regions, 2 threads), then
    ``LLM(tensor_parallel_size=2)``, whose workers were forked and sat in libgomp forever. Now
    both this engine and a second TP=2 engine created after the first was shut down return the
    TP=1 tokens, and the first engine's workers are gone before the second starts.

    HF's own greedy tokens for the first prompt are also checked against the TP=1 reference
    (an oracle independent of vLLM).
    """
    import torch
    from transformers import AutoModelForCausalLM

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # a multi-threaded parallel region even on a 1-core runner
    try:
        hf = AutoModelForCausalLM.from_pretrained(tiny_qwen3, torch_dtype=torch.float32).eval()
        with torch.inference_mode():
            out = hf.generate(torch.tensor([PROMPTS[0]]), max_new_tokens=4, do_sample=False)
    finally:
        torch.set_num_threads(threads)
    assert out[0, len(PROMPTS[0]):].tolist() == reference[0][:4]

    first_workers: list = []

    def remember_workers(llm) -> dict:
        first_workers.extend(_worker_procs())
        return {}

    first = _generate(tiny_qwen3, PROMPTS, tensor_parallel_size=2, inspect=remember_workers)
    assert first["tokens"] == reference
    assert len(first_workers) == 2, first_workers
    deadline = time.monotonic() + 30
    while any(p.is_running() and p.status() != "zombie" for p in first_workers):
        assert time.monotonic() < deadline, f"first engine's workers still running: {first_workers}"
        time.sleep(0.2)
    # the second engine also sets the distributed timeouts (non-default: vLLM's is None, i.e.
    # torch's); each worker process joins its groups with them (vllm/v1/worker/gpu_worker.py
    # init_worker_distributed_environment, vllm/distributed/utils.py)
    second = _generate(tiny_qwen3, PROMPTS, tensor_parallel_size=2, distributed_timeout_seconds=900,
                       cpu_distributed_timeout_seconds=600, inspect=_timeouts)
    assert second["tokens"] == reference
    assert second["timeouts"] == [[900, 600], [900, 600]], second


def _timeouts(llm) -> dict:
    def read(worker):
        p = worker.parallel_config
        return [p.distributed_timeout_seconds, p.cpu_distributed_timeout_seconds]

    return {"timeouts": llm.collective_rpc(read)}


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_pp2_matches_tp1(tiny_qwen3, reference):
    assert _generate(tiny_qwen3, PROMPTS, pipeline_parallel_size=2) == reference


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_tp2_graph_mode_matches_tp1(tiny_qwen3, reference):
    """TP=2 without --enforce-eager: the ACL graphs are captured with the TP all-reduce inside
    (vLLM's own capture context asserts on non-CUDA communicators; the runner substitutes ours)."""
    got = _generate(tiny_qwen3, PROMPTS, tensor_parallel_size=2, enforce_eager=False,
                    compilation_config={"cudagraph_capture_sizes": [1, 2, 4, 8]},
                    inspect=_graph_facts)
    assert got["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert got["capture_sizes"] == [1, 2, 4, 8]
    assert got["tokens"] == reference


def test_graph_mode_restart_loads_compile_cache(tiny_qwen3, reference, tmp_path):
    """The second start of the same model reloads vLLM's AOT compile cache (it used to die with
    "'NoneType' object is not callable": vLLM's mega-artifact reload needs inductor output)."""
    env = {"VLLM_CACHE_ROOT": str(tmp_path / "vllm_cache")}  # private: first start compiles
    first = _run(tiny_qwen3, tmp_path, "graph_first", graph=True, extra_env=env)
    second = _run(tiny_qwen3, tmp_path, "graph_second", graph=True, extra_env=env)
    assert "Directly load AOT compilation" not in (tmp_path / "graph_first.log").read_text()
    assert "Directly load AOT compilation" in (tmp_path / "graph_second.log").read_text()
    assert first["tokens"] == reference
    assert second["tokens"] == reference


@pytest.fixture(scope="module")
def dp2(tiny_qwen3, tmp_path_factory) -> dict:
    """One DP=2 engine (AsyncLLM): all prompts concurrently, then a single request alone."""
    tmp = tmp_path_factory.mktemp("dp2")
    out, log = str(tmp / "dp2.json"), str(tmp / "dp2.log")
    _wait_all([(_spawn(["dp", tiny_qwen3, out], log), log)])
    with open(out) as f:
        return json.load(f)


def test_dp2_matches_tp1(dp2, reference):
    assert dp2["batch"] == reference


def test_dp2_single_request_completes(dp2, reference):
    """One request for two DP ranks: the idle rank must not stall the busy one."""
    assert dp2["single"] == reference[2]


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory) -> str:
    """A tiny random-weight Qwen3-MoE checkpoint (moe_checkpoints.save_tiny)."""
    from moe_checkpoints import save_tiny

    from vllm_ascend import demo_model

    return save_tiny("qwen3_moe", tmp_path_factory.mktemp("moe") / "moe", str(demo_model.prepare()))


@pytest.fixture(scope="module")
def moe_reference(tiny_moe, in_process) -> list[list[int]]:
    """The MoE model's single-device tokens, computed in this process."""
    return _generate(tiny_moe, PROMPTS)


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_ep2_matches_ep1(tiny_moe, moe_reference):
    """Expert parallelism: a tiny Qwen3-MoE with TP=2 + enable_expert_parallel (each
    rank holds half the experts; results combined through our communicator) gives the tokens of
    the single-device run."""
    ep1 = moe_reference
    assert len(ep1) == len(PROMPTS) and all(len(t) == NEW_TOKENS for t in ep1)
    assert _generate(tiny_moe, PROMPTS, tensor_parallel_size=2, enable_expert_parallel=True) == ep1


def test_dp2_ep_moe_matches_dp1(tiny_moe, moe_reference, tmp_path):
    """DP=2 with expert parallelism on the tiny Qwen3-MoE (``AsyncLLM``; each DP rank an engine
    core holding half the experts): the DP ranks agree on every step's batch shape through our
    CPU group (vLLM 0.34: ``dispatch_cg_and_sync_dp``), an idle rank runs dummy batches, tokens
    cross ranks through our communicator; all prompts at once and then a single request (one
    rank idle) give the single-device tokens."""
    out, log = str(tmp_path / "dp2_moe.json"), str(tmp_path / "dp2_moe.log")
    _wait_all([(_spawn(["dp", tiny_moe, out, "ep"], log), log)])
    with open(out) as f:
        got = json.load(f)
    assert got["batch"] == moe_reference
    assert got["single"] == moe_reference[2]


def test_ray_tp2_matches_tp1(tiny_qwen3, reference, tmp_path):
    """TP=2 through ``--distributed-executor-backend ray`` gives the TP=1 tokens.

    Also checked: the placement group asks for ``NPU`` only (2 bundles of one NPU each); each
    worker is a Ray actor running ``NPUPlatform`` in emulation (``VLLM_ASCEND_EMULATE`` reached
    it although the cluster started without it) on its own NPU id, with
    ``ASCEND_RT_VISIBLE_DEVICES`` left unset (vLLM picks the device by local rank); the cluster
    was on 127.0.0.1 and none of its processes (GCS, raylet, ...) outlives the child.
    """
    import psutil

    out, log = str(tmp_path / "ray.json"), str(tmp_path / "ray.log")
    _wait_all([(_spawn(["ray", tiny_qwen3, out], log), log)])
    with open(out) as f:
        got = json.load(f)
    assert got["tokens"] == reference
    assert len(got["bundles"]) == 2
    for bundle in got["bundles"]:
        assert bundle == {"NPU": 1.0}, bundle
    workers = got["workers"]
    assert [w["platform"] for w in workers] == ["NPUPlatform"] * 2
    assert [w["emulate"] for w in workers] == ["1", "1"]
    assert [w["visible"] for w in workers] == [None, None]
    assert all(w["in_actor"] for w in workers)
    assert sorted(i for w in workers for i in w["npu_ids"]) == ["0", "1"]
    assert got["node_ip"] == "127.0.0.1"
    pids = got["ray_pids"] + [w["pid"] for w in workers]
    assert len(got["ray_pids"]) >= 2, got["ray_pids"]  # at least the GCS server and the raylet

    def running() -> list[int]:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        return alive

    deadline = time.monotonic() + 10  # Ray workers exit on their own once the raylet is gone
    while running() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not running(), f"Ray processes outlived the child: {running()}"

