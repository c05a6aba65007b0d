"""TP=2 (multiproc and Ray executors), PP=2, DP=2 and EP=2 in CPU emulation give the same greedy
tokens as TP=1 (NPUCommunicator/gloo).

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
  process starts are its subject) run in child processes (this file run as a script): each child
  gets ``HANG_GUARD_S`` seconds after its engine is up (and a start-up allowance before that),
  then is killed and the test fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

READY_TIMEOUT_S = 300
"""Bound on the workers' READY handshake for the in-process engines (``VLLM_ENGINE_READY_TIMEOUT_S``)."""

TEST_TIMEOUT_S = 900
"""pytest-timeout for a test that runs engines in this process (start-up, generation, shutdown)."""

HANG_GUARD_S = 120
"""Seconds a started engine may take to generate before the test fails (killed, never hangs)."""

STARTUP_S = 420
"""Seconds allowed for engine start-up on a 2-core CI box (model load, profiling, KV cache)."""

NEW_TOKENS = 8
PROMPTS = [  # token ids (tokenization is not under test); lengths 5..23
    [1, 504, 3458, 314, 4536],
    [1, 2189, 578, 260, 2103, 282, 3704, 30, 216, 198, 4154, 1670],
    [7, 19, 3456, 22, 901, 15000, 40000, 12, 5, 877, 343, 42, 6060, 1234, 9876, 4321, 101,
     202, 303, 404, 505, 606, 707],
    [49000, 2, 3],
]


# --------------------------------------------------------------------------- child process side

def _child_env() -> None:
    os.environ.pop("VLLM_TARGET_DEVICE", None)  # would bypass platform plugins
    os.environ["VLLM_ASCEND_EMULATE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "2GiB")
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _generate(model: str, prompts: list[list[int]], inspect=None, enforce_eager: bool = True,
              **engine_kw):
    """Greedy tokens per prompt; with ``inspect``, also ``inspect(llm)`` taken while it is up.

    The engine is shut down before returning (executor first: its worker processes or Ray
    actors), so engines can follow one another in one process.
    """
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=model, dtype="float32", max_model_len=256, enforce_eager=enforce_eager,
              gpu_memory_utilization=0.5, seed=0, max_num_seqs=8, **engine_kw)
    print("ENGINE_READY", flush=True)
    try:
        params = SamplingParams(temperature=0.0, max_tokens=NEW_TOKENS, ignore_eos=True)
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                            use_tqdm=False)
        tokens = [list(o.outputs[0].token_ids) for o in outs]
        seen = None if inspect is None else inspect(llm)
    finally:
        llm.llm_engine.engine_core.shutdown()
    return tokens if seen is None else {"tokens": tokens, **seen}


def _graph_facts(llm) -> dict:
    comp = llm.llm_engine.vllm_config.compilation_config
    return {"cudagraph_mode": comp.cudagraph_mode.name, "capture_sizes": comp.cudagraph_capture_sizes}


def _ray_worker_facts(worker) -> dict:
    """Run inside each Ray worker (``collective_rpc`` passes the worker): what it really got."""
    import ray
    from vllm.platforms import current_platform

    return {
        "platform": type(current_platform).__name__,
        "emulate": os.environ.get("VLLM_ASCEND_EMULATE"),
        "visible": os.environ.get("ASCEND_RT_VISIBLE_DEVICES"),
        "npu_ids": ray.get_runtime_context().get_accelerator_ids()["NPU"],
        "in_actor": ray.get_runtime_context().get_actor_id() is not None,
        "pid": os.getpid(),
    }


def _generate_ray(model: str, prompts: list[list[int]]) -> dict:
    """TP=2 through vLLM's Ray executor on a local Ray cluster bound to 127.0.0.1.

    The cluster is started as a user would with ``ray start --head --resources='{"NPU": 2}'``
    from a shell that lacks ``VLLM_ASCEND_EMULATE``: the raylet (so every Ray worker process)
    starts without it, and the platform must hand it to the workers itself. ``NPU`` is the
    resource in both modes (Ray's Ascend accelerator name, ``NPUPlatform.ray_device_key``); with 2
    ``NPU`` on a 2-core box, CPU never gates the placement group (its bundles ask for NPU only).
    """
    # read when ray is imported: single-node mode (Ray binds 127.0.0.1, not the host's address);
    # no auto-init (a late ray.kill in the executor's finalizer must not start a new cluster)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_ENABLE_AUTO_CONNECT"] = "0"
    import ray

    emulate = os.environ.pop("VLLM_ASCEND_EMULATE")
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False,
             num_cpus=1, object_store_memory=80 << 20, resources={"NPU": 2})
    os.environ["VLLM_ASCEND_EMULATE"] = emulate
    # engine core in this process, on this Ray driver (ray.init above): a separate engine-core
    # process is not this driver. When vLLM forked it, it inherited a dead Ray connection and hung
    # creating the placement group; the spawned one the platform now starts (docs/worker-start.md)
    # is not tested with Ray.
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    node = ray._private.worker._global_node  # no public API lists the processes ray.init started
    ray_pids = [p.process.pid for procs in node.all_processes.values() for p in procs]

    def inspect(llm) -> dict:
        return {
            "bundles": [b for pg in ray.util.placement_group_table().values()
                        if pg["state"] == "CREATED" for b in pg["bundles"].values()],
            "workers": llm.collective_rpc(_ray_worker_facts),
            "node_ip": ray.util.get_node_ip_address(),
            "ray_pids": ray_pids,
        }

    try:
        return _generate(model, prompts, inspect=inspect, tensor_parallel_size=2,
                         distributed_executor_backend="ray")
    finally:
        ray.shutdown()


def _generate_dp(model: str, prompts: list[list[int]]) -> dict:
    """Data parallel 2 through ``AsyncLLM`` (vLLM's online DP path: one engine core per DP rank
    behind a DP coordinator; ``LLM()`` refuses DP>1 and offline SPMD DP is MoE-only)."""
    import asyncio

    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.v1.engine.async_llm import AsyncLLM

    args = AsyncEngineArgs(model=model, dtype="float32", max_model_len=256, enforce_eager=True,
                           gpu_memory_utilization=0.5, seed=0, max_num_seqs=8,
                           data_parallel_size=2)
    params = SamplingParams(temperature=0.0, max_tokens=NEW_TOKENS, ignore_eos=True)

    async def one(engine, i, p):
        final = None
        async for out in engine.generate(TokensPrompt(prompt_token_ids=p), params, f"req-{i}"):
            final = out
        return list(final.outputs[0].token_ids)

    async def main():
        engine = AsyncLLM.from_engine_args(args)
        print("ENGINE_READY", flush=True)
        try:
            batch = await asyncio.gather(*(one(engine, i, p) for i, p in enumerate(prompts)))
            # then exactly one request in flight: one DP rank busy, the other idle
            single = await one(engine, len(prompts), prompts[2])
            return {"batch": batch, "single": single}
        finally:
            engine.shutdown()

    return asyncio.run(main())


def _child_main(argv: list[str]) -> None:
    """``run MODEL OUT TP PP [ep] [graph]``, ``dp MODEL OUT`` or ``ray MODEL OUT``."""
    _child_env()
    mode, model, out = argv[0], argv[1], argv[2]
    if mode == "run":
        tp, pp = int(argv[3]), int(argv[4])
        flags = set(argv[5:])
        kw = {}
        if "graph" in flags:  # ACL graph mode (vLLM's default FULL_AND_PIECEWISE), few sizes
            kw = dict(enforce_eager=False, compilation_config={"cudagraph_capture_sizes": [1, 2, 4, 8]},
                      inspect=_graph_facts)
        tokens = _generate(model, PROMPTS, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                           enable_expert_parallel="ep" in flags, **kw)
    elif mode == "dp":
        tokens = _generate_dp(model, PROMPTS)
    elif mode == "ray":
        tokens = _generate_ray(model, PROMPTS)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    with open(out, "w") as f:
        json.dump(tokens, f)


# --------------------------------------------------------------------------- test side

def _spawn(args: list[str], log_path: str, extra_env: dict | None = None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # conftest sets 0; DP needs the engine process
    env.update(extra_env or {})
    log = open(log_path, "w")
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), *args], stdout=log,
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    assert _generate(tiny_qwen3, PROMPTS, tensor_parallel_size=2) == reference


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


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_ep2_matches_ep1(tmp_path, in_process):
    """Expert parallelism (issue 7): a tiny Qwen3-MoE with TP=2 + enable_expert_parallel (each
    rank holds half the experts; results combined through our communicator) gives the tokens of
    the single-device run."""
    from moe_checkpoints import save_tiny

    from vllm_ascend import demo_model

    moe = save_tiny("qwen3_moe", tmp_path / "moe", str(demo_model.prepare()))
    ep1 = _generate(moe, PROMPTS)
    assert len(ep1) == len(PROMPTS) and all(len(t) == NEW_TOKENS for t in ep1)
    assert _generate(moe, PROMPTS, tensor_parallel_size=2, enable_expert_parallel=True) == ep1


def test_ray_tp2_matches_tp1(tiny_qwen3, reference, tmp_path):
    """TP=2 through ``--distributed-executor-backend ray`` (issue 5) gives the TP=1 tokens.

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


if __name__ == "__main__":
    _child_main(sys.argv[1:])
