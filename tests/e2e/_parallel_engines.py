# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The engine runs of ``test_parallel.py``: greedy tokens from one engine (in the caller's process
or, run as a script, in a child process the test starts).

Script usage: ``run MODEL OUT TP PP [ep] [graph]``, ``dp MODEL OUT [ep]`` or ``ray MODEL OUT``; the
result is written to ``OUT`` as JSON.
"""

from __future__ import annotations

import json
import os
import sys

NEW_TOKENS = 8
PROMPTS = [  # token ids (tokenization is not under test); lengths 5..23
    [1, 504, 3458, 314, 4536],
    [1, 2189, 578, 260, 2103, 282, 3704, 30, 216, 198, 4154, 1670],
    [7, 19, 3456, 22, 901, 15000, 40000, 12, 5, 877, 343, 42, 6060, 1234, 9876, 4321, 101,
     202, 303, 404, 505, 606, 707],
    [49000, 2, 3],
]


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


def _generate_dp(model: str, prompts: list[list[int]], **engine_kw) -> dict:
    """Data parallel 2 through ``AsyncLLM`` (vLLM's online DP path: one engine core per DP rank
    behind a DP coordinator; ``LLM()`` refuses DP>1 and offline SPMD DP is MoE-only).

    A dense model's DP ranks run as independent DP=1 engines (``EngineCoreProc``); a MoE
    model's are ``DPEngineCoreProc``s that agree every step on the batch shape
    (``dispatch_cg_and_sync_dp``, ``vllm/v1/worker/gpu/dp_utils.py`` on vLLM 0.34), an idle rank
    running dummy batches, and their MoE layers gather tokens across the DP ranks."""
    import asyncio

    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.v1.engine.async_llm import AsyncLLM

    args = AsyncEngineArgs(model=model, dtype="float32", max_model_len=256, enforce_eager=True,
                           gpu_memory_utilization=0.5, seed=0, max_num_seqs=8,
                           data_parallel_size=2, dp_sync_interval=4,  # vLLM's default: 16
                           **engine_kw)
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
    """``run MODEL OUT TP PP [ep] [graph]``, ``dp MODEL OUT [ep]`` or ``ray MODEL OUT``."""
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
        tokens = _generate_dp(model, PROMPTS, enable_expert_parallel="ep" in argv[3:])
    elif mode == "ray":
        tokens = _generate_ray(model, PROMPTS)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    with open(out, "w") as f:
        json.dump(tokens, f)



if __name__ == "__main__":
    _child_main(sys.argv[1:])
