# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Build, drive and tear down a vLLM engine for the e2e tests (one per test module)."""

from __future__ import annotations

from prompts import NEW_TOKENS


def make_llm(model_path: str, **overrides):
    """A vLLM engine on the checkpoint with the parity settings (float32, eager, seed 0)."""
    from vllm import LLM

    kwargs = dict(model=model_path, dtype="float32", max_model_len=1024, enforce_eager=True,
                  gpu_memory_utilization=0.5, seed=0, enable_prefix_caching=True)
    kwargs.update(overrides)
    return LLM(**kwargs)


def close_llm(llm) -> None:
    """Shut the engine down so the next module can build its own in this process."""
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
    from vllm.v1.engine.core_client import InprocClient

    engine = getattr(llm, "llm_engine", None)
    core = getattr(engine, "engine_core", None)
    if core is not None:
        core.shutdown()
    del llm
    # An in-process engine core's shutdown (EngineCore.shutdown, vllm/v1/engine/core.py) ends
    # with gc.unfreeze() and cleanup_dist_env_and_memory(), which tears the process groups
    # down and runs gc.collect(). Repeating both here (a gc.collect() of ours, then that
    # cleanup again) were two more full passes over the ~760k objects vLLM's imports leave,
    # ~2.5 s of every close on the 2-core CI box, freeing nothing: the caller still holds the
    # LLM. Engines whose core runs elsewhere (multiprocessing client) get the cleanup here.
    if not isinstance(core, InprocClient):
        cleanup_dist_env_and_memory()


_SHARED: dict[str, object] = {}


def shared_llm(model_path: str):
    """The engine ``make_llm(model_path)`` (no overrides), built on first use and kept for the
    next tests that ask for it; :func:`release_shared_llm` closes it (conftest does, as soon as
    the next test does not use it). Only for tests that leave the engine as they found it: no
    sleep, LoRA load or weight reload."""
    if _SHARED.get("path") != model_path:
        release_shared_llm()
        _SHARED.update(path=model_path, llm=make_llm(model_path))
    return _SHARED["llm"]


def release_shared_llm() -> None:
    """Close the shared engine, if one is up (a no-op otherwise)."""
    llm = _SHARED.pop("llm", None)
    _SHARED.clear()
    if llm is not None:
        close_llm(llm)


def greedy_params(n: int = NEW_TOKENS):
    from vllm import SamplingParams

    return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True, logprobs=5, seed=0)


def generate_ids(llm, prompts: list[list[int]], n: int = NEW_TOKENS):
    """RequestOutputs for token-id prompts, in prompt order."""
    from vllm.inputs import TokensPrompt

    return llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], greedy_params(n),
                        use_tqdm=False)
