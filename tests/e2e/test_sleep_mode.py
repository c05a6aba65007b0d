# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sleep mode and weight updates (CPU emulation, ACL graph mode FULL_DECODE_ONLY).

vLLM's documented semantics (``vllm/entrypoints/llm.py``, ``LLM.sleep`` / ``wake_up``): level 1
offloads the weights to host memory and drops the KV cache, level 2 drops both; ``wake_up(tags)``
restores selectively. The oracle for "same outputs" is the engine's own greedy tokens before
sleeping and, for changed weights, HF transformers on those weights. One engine in this module.
"""

from __future__ import annotations

import pytest
import torch

# Emulated device memory is process RSS. glibc raises its mmap threshold after large frees, after
# which big buffers come from the heap and are not returned to the OS on free; fixing the
# threshold (mallopt M_MMAP_THRESHOLD = -3) keeps every buffer >= 1 MiB mmap-backed, as device
# allocations are returned to a device.
try:
    import ctypes

    ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 20)
except OSError:  # not glibc
    pass

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Water boils at"]
TOKENS = 8
#: --sleep-preserve-parameter-names: kept over level-2 sleep (vLLM's Worker keeps a host copy)
PRESERVED = "model.norm.weight"


def _greedy(llm, prompts=PROMPTS):
    from vllm import SamplingParams

    outs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=TOKENS,
                                                ignore_eos=True), use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


def _used():
    """Resident bytes of this process: emulated device memory, read unclamped.

    ``ascend_ops.device.mem_get_info`` reports RSS bounded by the emulated budget; in a pytest
    process that already built other engines RSS can exceed that budget, and a clamped figure
    would hide what sleep released. /proc/self/statm field 2 is resident pages (proc(5)).
    """
    import resource

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


@pytest.fixture(scope="module")
def llm(model_path):
    from _graph_eager_ref import graph_llm
    from engine import close_llm

    engine = graph_llm(model_path, "FULL_DECODE_ONLY", enable_sleep_mode=True,
                       sleep_preserve_parameter_names=[PRESERVED])
    yield engine
    close_llm(engine)


@pytest.fixture(scope="module")
def reference(llm):
    return _greedy(llm)


def _worker(llm):
    return llm.llm_engine.model_executor.driver_worker.worker


def test_backend_is_ascend(llm, reference):
    from vllm_ascend_platform.worker.sleep_mode import AscendSleepModeBackend

    assert llm.llm_engine.vllm_config.model_config.sleep_mode_backend == "ascend"
    assert isinstance(_worker(llm).sleep_mode_backend, AscendSleepModeBackend)


def test_level1_cycles_same_tokens_and_kv_released(llm, reference):
    from ascend_ops.device.tagged_memory import default_pool

    kv_bytes = default_pool().nbytes("kv_cache")
    assert kv_bytes > 0
    for cycle in range(5):
        before = _used()
        llm.sleep(level=1)
        assert llm.llm_engine.is_sleeping()
        assert _worker(llm).sleep_mode_backend.state() == "SUSPENDED"
        # emulated device memory is process RSS: the KV cache's pages are returned. Pages of
        # the freshly calloc'ed cache that were never written are not resident before the first
        # sleep; the wake-up zeroes the whole cache, so from the second cycle on all of it is.
        if cycle > 0:
            assert before - _used() >= 0.9 * kv_bytes
        llm.wake_up()
        assert not llm.llm_engine.is_sleeping()
        assert _greedy(llm) == reference


def test_level2_selective_wake_and_reload(llm, reference):
    from ascend_ops.device.tagged_memory import default_pool

    pool = default_pool()
    kept = dict(_worker(llm).model_runner.model.named_parameters())[PRESERVED].detach().clone()
    before = _used()
    llm.sleep(level=2)
    freed = before - _used()
    assert freed >= 0.9 * (pool.nbytes("kv_cache") + pool.nbytes("weights"))
    llm.wake_up(tags=["weights"])
    assert pool.state("kv_cache") == "discarded" and pool.state("weights") == "resident"
    # before the reload: the preserved parameter is back, the others are zeros (worker/sleep_mode.py)
    now = dict(_worker(llm).model_runner.model.named_parameters())
    assert torch.equal(now[PRESERVED], kept) and bool(kept.abs().sum() > 0)
    assert not now["model.embed_tokens.weight"].any()
    llm.collective_rpc("reload_weights")
    llm.wake_up(tags=["kv_cache"])
    assert _greedy(llm) == reference


def test_perturbed_weights_match_hf_then_back(llm, reference, model_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hf = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.02 * p.float().std().clamp(min=1e-3))
    new = {n: t.detach().clone() for n, t in hf.state_dict().items()}
    tok = AutoTokenizer.from_pretrained(model_path)
    expect = []
    for prompt in PROMPTS:
        ids = tok(prompt, return_tensors="pt").input_ids
        out = hf.generate(ids, max_new_tokens=TOKENS, min_new_tokens=TOKENS, do_sample=False)
        expect.append(out[0, ids.shape[1]:].tolist())

    llm.sleep(level=2)
    llm.wake_up(tags=["weights"])
    llm.collective_rpc("reload_weights", kwargs={"weights_iterator": list(new.items())})
    llm.wake_up(tags=["kv_cache"])
    assert _greedy(llm) == expect
    assert expect != reference
    # back to the checkpoint, in place while awake (no sleep needed)
    llm.collective_rpc("reload_weights")
    assert _greedy(llm) == reference


def test_bad_input_clear_error_and_keeps_serving(llm, reference):
    llm.wake_up()  # while awake: vLLM's executor warns and does nothing
    with pytest.raises(Exception, match="sleep level must be 1"):
        llm.sleep(level=3)
    llm.wake_up()  # resumes the scheduler paused by the failed sleep
    assert _greedy(llm) == reference
    llm.sleep(level=1)
    llm.wake_up(tags=["bogus"])  # not a sleeping tag: vLLM warns, nothing restored
    assert llm.llm_engine.is_sleeping()
    llm.wake_up()
    assert _greedy(llm) == reference


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_host_rss_flat_over_20_cycles(llm, reference):
    llm.sleep(level=1)
    llm.wake_up()
    start = _rss()
    for _ in range(20):
        llm.sleep(level=1)
        llm.wake_up()
    assert _rss() < start * 1.05
    assert _greedy(llm) == reference


def test_backend_rejects_unknown_tag_and_level():
    from vllm_ascend_platform.worker.sleep_mode import AscendSleepModeBackend

    backend = AscendSleepModeBackend()
    with pytest.raises(ValueError, match="unknown memory tag"):
        backend.resume(["bogus"])
    with pytest.raises(ValueError, match="sleep level"):
        backend.suspend(0)
