# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of the simulated-NPU e2e tests: engines on the NPU code path over the simulator.

Run as a script: ``python _sim_npu_child.py SPEC_JSON OUT_JSON``. ``SPEC_JSON`` holds ``model``,
``prompts`` (token ids), ``max_tokens`` (one per prompt), ``engine`` (LLM keyword arguments shared
by every run) and ``runs``: a list of ``{"name", "engine": {...}, "env": {...}}``, built one after
another in this process (each closed before the next; ``env`` is applied before the run's engine
starts and removed after it; ``VLLM_ASCEND_GRAPH_PARAM_UPDATE`` is applied by calling the
platform's ``connect_graph_param_updates`` again, as the general plugin does once per process).
``OUT_JSON`` receives ``{name: {"tokens", "facts"}}``; a run with ``"expect_error": true`` gets
``{"tokens", "error"}`` instead (``error`` None if it did not fail; put it last: the failed engine
is left as it is).

The environment is simulated-NPU mode (docs/simulated-npu.md): ``VLLM_ASCEND_SIMULATE_NPU=1``,
``VLLM_ASCEND_EMULATE`` removed (the e2e session sets it for the emulation tests). When
``ASCEND_OPS_SIM_CALLSITES_DIR`` is set, the platform dumps the simulator's ``call_sites()`` there
when this process exits (and so does every TP worker process).
"""

from __future__ import annotations

import gc
import json
import os
import sys

#: set by scripts/npu_smoke.sh on an NPU host: the same children run on the real torch_npu
REAL_NPU_ENV = "ASCEND_OPS_SIM_TIER_REAL_NPU"


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a simulated-NPU child, from ``base`` (default: ``os.environ``); with
    ``ASCEND_OPS_SIM_TIER_REAL_NPU=1`` the same environment without ``VLLM_ASCEND_SIMULATE_NPU``
    (the child then runs on the real NPU)."""
    env = dict(os.environ if base is None else base)
    env.pop("VLLM_ASCEND_EMULATE", None)
    env.pop("VLLM_TARGET_DEVICE", None)  # would bypass platform plugins
    if env.get(REAL_NPU_ENV) == "1":  # scripts/npu_smoke.sh on an NPU host: the real torch_npu
        env.pop("VLLM_ASCEND_SIMULATE_NPU", None)
    else:
        env["VLLM_ASCEND_SIMULATE_NPU"] = "1"
    env["HF_HUB_OFFLINE"] = "1"
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # engine core here: facts and ledger readable
    env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["VLLM_DISABLE_COMPILE_CACHE"] = "1"  # compile our passes, never a cached artifact
    return env


def _facts(llm) -> dict:
    """What this engine ran: graph mode, ACL graph replays, simulator ledger, op backends."""
    import ascend_ops
    from ascend_ops import simulator
    from vllm.config import CUDAGraphMode

    cfg = llm.llm_engine.vllm_config
    mine = []
    if cfg.compilation_config.cudagraph_mode != CUDAGraphMode.NONE:  # eager: no graph layer
        from vllm_ascend_graph.wrapper import ACLGraphWrapper

        mine = [w for w in list(ACLGraphWrapper._all_instances) if w.vllm_config is cfg]
    # the target model's graphs; vLLM 0.34's draft-model graphs (graph_role "draft",
    # vllm_ascend_graph.mrv2_spec_manager) are reported apart
    wrappers = [w for w in mine if w.__dict__.get("graph_role") is None]
    drafts = [w for w in mine if w.__dict__.get("graph_role") == "draft"]

    def replays(mode, among=wrappers) -> int:
        return sum(e.num_replays for w in among if w.runtime_mode == mode
                   for e in w.entries.values())

    ledger = simulator.ledger().snapshot()
    backends = sorted({b for (_, b) in ascend_ops.call_counts(per_backend=True)})
    return {
        "cudagraph_mode": cfg.compilation_config.cudagraph_mode.name,
        "full_replays": replays(CUDAGraphMode.FULL),
        "piecewise_replays": replays(CUDAGraphMode.PIECEWISE),
        "full_sizes": sorted({d.num_tokens for w in wrappers
                              if w.runtime_mode == CUDAGraphMode.FULL for d in w.entries}),
        "draft_full_replays": replays(CUDAGraphMode.FULL, drafts),
        "draft_full_sizes": sorted({(d.stage, d.num_tokens) for w in drafts for d in w.entries}),
        "sim_replays": ledger["replays"],
        "sim_launches": sum(ledger["launches"].values()),
        "backends": backends,
        "op_calls": ascend_ops.call_counts(),
        "simulated": simulator.active(),
    }


def _run(spec: dict, run: dict) -> dict:
    import ascend_ops
    from engine import close_llm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm_ascend_graph import params as graph_params
    from vllm_ascend_platform.startup.layers import connect_graph_param_updates

    saved = {k: os.environ.get(k) for k in run.get("env", {})}
    os.environ.update(run.get("env", {}))
    connect_graph_param_updates()  # the update hook as VLLM_ASCEND_GRAPH_PARAM_UPDATE now says
    replay_tokens: set[int] = set()

    def record(params) -> None:  # unpadded tokens of each FULL replay (batch sizes seen)
        if params.num_actual_tokens is not None:
            replay_tokens.add(int(params.num_actual_tokens))

    graph_params.register_param_update_hook(record)
    try:
        kwargs = dict(model=spec["model"], seed=0, **spec.get("engine", {}))
        kwargs.update(run.get("engine", {}))
        llm = LLM(**kwargs)
        try:
            ascend_ops.reset_call_counts()
            prompts = [TokensPrompt(prompt_token_ids=p) for p in spec["prompts"]]
            params = [SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)
                      for n in spec["max_tokens"]]
            outs = llm.generate(prompts, params, use_tqdm=False)
            tokens = [list(o.outputs[0].token_ids) for o in outs]
            facts = _facts(llm)
            facts["full_replay_tokens"] = sorted(replay_tokens)
            facts["num_cached_tokens"] = [o.num_cached_tokens for o in outs]  # local + external
        finally:
            close_llm(llm)
            gc.collect()
    finally:
        graph_params.unregister_param_update_hook(record)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        connect_graph_param_updates()
    return {"tokens": tokens, "facts": facts}


def main(argv: list[str]) -> None:
    simulated = os.environ.get("VLLM_ASCEND_SIMULATE_NPU") == "1"
    if (not simulated and os.environ.get(REAL_NPU_ENV) != "1") or "VLLM_ASCEND_EMULATE" in os.environ:
        raise SystemExit("start this script with child_env(): simulated-NPU (or real-NPU tier) mode only")
    spec = json.loads(open(argv[0]).read())
    results = {}
    for run in spec["runs"]:
        if run.get("expect_error"):  # a run that must fail: record the error, not its tokens
            try:
                results[run["name"]] = {"tokens": _run(spec, run)["tokens"], "error": None}
            except Exception as exc:  # noqa: BLE001 - the error is the result
                results[run["name"]] = {"tokens": None, "error": f"{type(exc).__name__}: {exc}"}
        else:
            results[run["name"]] = _run(spec, run)
    with open(argv[1], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
