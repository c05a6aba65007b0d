"""Eager reference for test_graph_parity: run in its own process (one engine per process).

argv: model_path, json list of prompts, max_tokens. Prints one JSON line: token ids per prompt.
"""

import json
import os
import sys

os.environ["VLLM_ASCEND_EMULATE"] = "1"
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ["HF_HUB_OFFLINE"] = "1"

if __name__ == "__main__":
    from vllm import LLM, SamplingParams

    path, prompts, max_tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    llm = LLM(model=path, dtype="float32", max_model_len=512, max_num_seqs=16,
              gpu_memory_utilization=0.5, enforce_eager=True)
    outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=max_tokens))
    print("EAGER_TOKENS " + json.dumps([list(o.outputs[0].token_ids) for o in outs]))
