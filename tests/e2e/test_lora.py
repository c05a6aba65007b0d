# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multi-LoRA serving through the Ascend plugin (CPU emulation, float32) vs HF transformers with
each adapter merged by peft.

One engine for the module: ``max_loras=3``, ``max_lora_rank=16``, prefix caching on and a
64-token step budget, so the long prompts are served by chunked prefill. Adapters are made here
by peft with non-zero random A and B (``lora_adapters.py``).

Last, a graph-mode engine (vLLM's default ``cudagraph_mode`` on the platform,
FULL_AND_PIECEWISE, capture sizes 1, 2, 4, 8) is built after the eager one is closed. It serves
two batches whose adapter per prompt differs, with different ``max_tokens`` so adapters leave
the batch between decode steps, against the HF references the earlier tests memoized
(``HFOracle.greedy`` keeps each (prompt, n) run): the adapter index buffers are refilled in
place each step, so a captured decode graph must follow the current adapters (docs/lora.md
"Graph safety").
"""

from __future__ import annotations

import pytest
import torch
from engine import close_llm, greedy_params, make_llm
from lora_adapters import MergedOracle, make_adapter
from prompts import NEW_TOKENS

BUDGET = 64  # max_num_batched_tokens: every prompt longer than this is chunked
PREFIX_TEXT = ("The keeper climbs the spiral staircase, cleans the lens, checks the oil level of "
               "the lamp, records the weather in the logbook and inspects the fog horn. ") * 12


@pytest.fixture(scope="module")
def adapters(model_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("lora")
    made = {f"a{i}": make_adapter(model_path, root / f"a{i}", seed=i) for i in (1, 2, 3)}
    made["a4"] = make_adapter(model_path, root / "a4", seed=4, rank=8)
    made["big"] = make_adapter(model_path, root / "big", seed=5, rank=32)
    return made


@pytest.fixture(scope="module")
def oracles(model_path, adapters):
    cache: dict[str, MergedOracle] = {}

    def get(name: str) -> MergedOracle:
        if name not in cache:
            cache[name] = MergedOracle(model_path, adapters[name])
        return cache[name]

    return get


#: the model's LoRA modules as vLLM names them (packed qkv / gate_up), all the adapters touch
LORA_MODULES = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
_open: list = []  # the eager engine while it is up (the graph-mode fixture closes it first)


def _close_eager() -> None:
    while _open:
        close_llm(_open.pop())


@pytest.fixture(scope="module")
def llm(model_path):
    # lora_dtype / lora_target_modules non-default (vLLM's: "auto" = the model dtype, None = every
    # supported module); the explicit values name the same, so the adapters' references hold
    engine = make_llm(model_path, enable_lora=True, max_loras=3, max_lora_rank=16,
                      max_cpu_loras=4, max_num_batched_tokens=BUDGET, max_num_seqs=16,
                      lora_dtype=torch.float32, lora_target_modules=LORA_MODULES)
    _open.append(engine)
    yield engine
    _close_eager()


def _req(adapters, name: str | None):
    from vllm.lora.request import LoRARequest

    if name is None:
        return None
    return LoRARequest(name, int(name[1:]) if name[1:].isdigit() else 99, adapters[name])


def _generate(llm, prompts, requests, n):
    from vllm.inputs import TokensPrompt

    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], greedy_params(n),
                        lora_request=requests, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs], outs


def test_one_adapter_equals_hf_merged(llm, adapters, oracles, oracle, prompt_ids):
    got, _ = _generate(llm, prompt_ids, _req(adapters, "a1"), NEW_TOKENS)
    want = [oracles("a1").greedy(p, NEW_TOKENS).tokens for p in prompt_ids]
    assert got == want
    base = [oracle.greedy(p, NEW_TOKENS).tokens for p in prompt_ids]
    assert sum(g != b for g, b in zip(got, base, strict=True)) >= 6, "the adapter barely changes the output"
    lora = llm.llm_engine.vllm_config.lora_config
    assert str(lora.lora_dtype).endswith("float32") and sorted(lora.target_modules) == sorted(LORA_MODULES)


def test_three_adapters_and_base_in_one_batch(llm, adapters, oracles, oracle, prompt_ids):
    names = [None, "a1", "a2", "a3"] * 2
    got, _ = _generate(llm, prompt_ids, [_req(adapters, n) for n in names], 16)
    for row, (name, p) in enumerate(zip(names, prompt_ids, strict=True)):
        ref = oracle if name is None else oracles(name)
        assert got[row] == ref.greedy(p, 16).tokens, f"row {row} (adapter {name})"


def test_prefix_cache_is_keyed_by_adapter_with_chunked_prefill(llm, adapters, oracles, oracle):
    bs = llm.llm_engine.vllm_config.cache_config.block_size
    prefix = oracle.encode_text(PREFIX_TEXT)[: 2 * bs + 8]
    assert len(prefix) > BUDGET, "the prompt must need chunked prefill"
    first = prefix + oracle.encode_text(" Question: what does the keeper clean?")
    second = prefix + oracle.encode_text(" Question: where is the lamp?")
    _, warm = _generate(llm, [first], _req(adapters, "a2"), 4)
    assert warm[0].num_cached_tokens == 0
    _, other = _generate(llm, [second], _req(adapters, "a3"), 4)
    assert other[0].num_cached_tokens == 0, "a block cached under adapter a2 served adapter a3"
    got, same = _generate(llm, [second], _req(adapters, "a2"), 8)
    assert same[0].num_cached_tokens == 2 * bs
    assert got[0] == oracles("a2").greedy(second, 8).tokens


def test_adapter_load_and_unload_at_run_time(llm, adapters, oracles, prompt_ids):
    engine = llm.llm_engine
    req = _req(adapters, "a4")
    assert engine.add_lora(req)
    assert 4 in engine.list_loras()
    got, _ = _generate(llm, prompt_ids[:4], req, 16)
    assert got == [oracles("a4").greedy(p, 16).tokens for p in prompt_ids[:4]]
    assert engine.remove_lora(4)
    assert 4 not in engine.list_loras()


def test_more_adapters_than_max_loras_in_flight(llm, adapters, oracles, prompt_ids):
    names = ["a1", "a2", "a3", "a4", "a1"]
    got, _ = _generate(llm, prompt_ids[:5], [_req(adapters, n) for n in names], 16)
    for row, (name, p) in enumerate(zip(names, prompt_ids[:5], strict=True)):
        assert got[row] == oracles(name).greedy(p, 16).tokens, f"row {row} (adapter {name})"


@pytest.mark.parametrize("case", ["rank_above_max", "missing_path"])
def test_bad_adapter_is_refused_and_engine_keeps_serving(llm, adapters, oracles, prompt_ids,
                                                         tmp_path, case):
    from vllm.lora.request import LoRARequest

    if case == "rank_above_max":
        bad, match = LoRARequest("big", 50, adapters["big"]), "rank"
    else:
        bad, match = LoRARequest("gone", 51, str(tmp_path / "no-such-adapter")), "no-such-adapter"
    with pytest.raises(Exception, match=match):
        _generate(llm, prompt_ids[:1], bad, 4)
    got, _ = _generate(llm, prompt_ids[:2], _req(adapters, "a1"), 8)
    assert got == [oracles("a1").greedy(p, 8).tokens for p in prompt_ids[:2]]


# Graph mode (last: its fixture closes the eager engine). Per batch, the adapter of each prompt
# and its HF reference run (adapter, n): runs the tests above computed, so the oracle's memo
# serves them. A row asks for max_tokens <= n; the first m tokens of an n-token greedy run are
# the m-token greedy run (HFOracle.greedy: one argmax per step, each step only sees earlier ones).
GRAPH_BATCHES = [
    # test_three_adapters_and_base_in_one_batch's rows (16 tokens)
    [(None, 16, 16), ("a1", 16, 5), ("a2", 16, 9), ("a3", 16, 16),
     (None, 16, 3), ("a1", 16, 12), ("a2", 16, 7), ("a3", 16, 14)],
    # every prompt with another adapter: a1/base at NEW_TOKENS (test_one_adapter_equals_hf_merged),
    # a2/a3 at 16 (test_more_adapters_than_max_loras_in_flight, the three-adapter batch)
    [("a1", NEW_TOKENS, 10), ("a2", 16, 16), ("a3", 16, 4), (None, NEW_TOKENS, 13),
     ("a1", NEW_TOKENS, 16), (None, NEW_TOKENS, 6), ("a2", 16, 11), ("a3", 16, 8)],
]


def _has_lora(desc) -> bool:
    """Whether a graph's key is a LoRA graph: vLLM 0.34's descriptors (``BatchDescriptor``,
    ``vllm/forward_context.py``; MRv2's ``BatchExecutionDescriptor``,
    ``vllm/v1/worker/gpu/cudagraph_utils.py``) count the active adapters
    (``num_active_loras``)."""
    return desc.num_active_loras > 0


@pytest.fixture(scope="module")
def graph_llm(model_path):
    _close_eager()  # one engine at a time
    # 512 batched tokens (the 8 prompts are 331): a short compiled profiling pass at start-up
    engine = make_llm(model_path, enable_lora=True, max_loras=3, max_lora_rank=16,
                      max_num_seqs=8, max_num_batched_tokens=512, enforce_eager=False,
                      compilation_config={"cudagraph_capture_sizes": [1, 2, 4, 8]})
    yield engine
    close_llm(engine)


def test_graph_mode_follows_the_active_adapters(graph_llm, adapters, oracles, oracle, prompt_ids):
    from _graph_eager_ref import engine_wrappers
    from vllm import SamplingParams
    from vllm.config import CUDAGraphMode
    from vllm.inputs import TokensPrompt

    assert graph_llm.llm_engine.vllm_config.compilation_config.cudagraph_mode.name == \
        "FULL_AND_PIECEWISE"
    full = engine_wrappers(graph_llm, CUDAGraphMode.FULL)
    assert any(_has_lora(d) for w in full for d in w.entries), "no FULL graph with LoRA captured"

    def lora_replays() -> int:
        return sum(e.num_replays for w in full for d, e in w.entries.items() if _has_lora(d))

    for batch in GRAPH_BATCHES:
        start = lora_replays()
        outs = graph_llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in prompt_ids],
            [SamplingParams(temperature=0.0, max_tokens=m, ignore_eos=True) for _, _, m in batch],
            lora_request=[_req(adapters, name) for name, _, _ in batch], use_tqdm=False)
        for row, ((name, n, m), p, out) in enumerate(zip(batch, prompt_ids, outs, strict=True)):
            ref = oracle if name is None else oracles(name)
            want = ref.greedy(p, n).tokens[:m]
            assert list(out.outputs[0].token_ids) == want, f"row {row} (adapter {name})"
        assert lora_replays() > start, "no FULL decode graph with LoRA was replayed"
