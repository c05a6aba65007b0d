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


def assert_oracle_agrees(float_path, quant_path, prompts, tokens, label, min_rate=0.95):
    from quant_oracle import load_oracle, teacher_forced

    agreed, total, misses = teacher_forced(load_oracle(float_path, quant_path), prompts, tokens)
    assert total == len(prompts) * NEW
    assert agreed / total >= min_rate, (
        f"{label}: {agreed}/{total} positions agree with the oracle:\n  " +
        "\n  ".join(misses))
    return agreed / total
