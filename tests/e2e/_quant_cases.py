"""Shared body of the msModelSlim e2e modules (test_quant_*.py): serve a checkpoint, judge the
greedy tokens against the float64 oracle (quant_oracle.py) teacher-forced."""

from __future__ import annotations

NEW = 16  # tokens per prompt
N_PROMPTS = 6
ENGINE = dict(quantization="ascend", max_model_len=512, max_num_batched_tokens=512,
              max_num_seqs=8, enforce_eager=True, gpu_memory_utilization=0.5, seed=0)


def generate(llm, prompts, n=NEW) -> list[list[int]]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts],
                        SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True),
                        use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


FIRST_PROMPT = "The capital of France is"


def first_token_logprobs(llm, tokenizer_path) -> tuple[list[int], dict[int, float]]:
    """Top-5 log-probabilities of the first generated token after :data:`FIRST_PROMPT`."""
    from transformers import AutoTokenizer
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    ids = AutoTokenizer.from_pretrained(tokenizer_path)(FIRST_PROMPT).input_ids
    out = llm.generate([TokensPrompt(prompt_token_ids=ids)],
                       SamplingParams(temperature=0.0, max_tokens=1, logprobs=5), use_tqdm=False)
    return ids, {k: v.logprob for k, v in out[0].outputs[0].logprobs[0].items()}


def assert_first_token_matches(float_path, quant_path, ids, ours: dict[int, float]) -> None:
    """Before any generated token feeds back, our log-probabilities equal the oracle's (float32
    body) to 5e-3 nats (measured: 1e-4 for both schemes in emulation)."""
    import torch
    from quant_oracle import load_oracle

    with torch.inference_mode():
        lp = torch.log_softmax(load_oracle(float_path, quant_path)(
            input_ids=torch.tensor([ids])).logits[0, -1].double(), -1)
    for tok, val in ours.items():
        assert abs(val - float(lp[tok])) <= 5e-3, (tok, val, float(lp[tok]))


def assert_oracle_agrees(float_path, quant_path, prompts, tokens, label, min_rate=0.95):
    from quant_oracle import load_oracle, teacher_forced

    agreed, total, misses = teacher_forced(load_oracle(float_path, quant_path), prompts, tokens)
    assert total == len(prompts) * NEW
    assert agreed / total >= min_rate, (
        f"{label}: {agreed}/{total} positions agree with the oracle:\n  " +
        "\n  ".join(misses))
    return agreed / total
