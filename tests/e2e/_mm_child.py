# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of test_multimodal_qwen_vl.py: one ``LLM()`` engine in the mode its environment
names (``VLLM_ASCEND_EMULATE=1`` or ``VLLM_ASCEND_SIMULATE_NPU=1``), image prompts in, tokens and
what ran out (op calls per backend, the simulator's ledger of NPU operator launches).

Usage: ``python _mm_child.py spec.json out.json``. Spec: ``model``, ``engine`` (LLM kwargs),
``prompts`` (``{"text": str, "images": [png paths]}``), ``max_tokens``.
"""

from __future__ import annotations

import gc
import json
import os
import sys


def _hits(llm) -> int:
    """Prefix-cache hits in tokens so far (``vllm:prefix_cache_hits``, ``LLM.get_metrics``)."""
    values = {m.name: m.value for m in llm.get_metrics() if hasattr(m, "value")}
    return int(values["vllm:prefix_cache_hits"])


def main(argv: list[str]) -> None:
    import ascend_ops
    from ascend_ops import simulator
    from engine import close_llm
    from PIL import Image
    from vllm import LLM, SamplingParams

    spec = json.loads(open(argv[0]).read())
    llm = LLM(model=spec["model"], seed=0, **spec.get("engine", {}))
    try:
        ascend_ops.reset_call_counts()
        requests = []
        for p in spec["prompts"]:
            request: dict = {"prompt": p["text"]}
            if p["images"]:
                images = [Image.open(path).convert("RGB") for path in p["images"]]
                request["multi_modal_data"] = {"image": images if len(images) > 1 else images[0]}
            requests.append(request)
        params = SamplingParams(temperature=0.0, max_tokens=spec["max_tokens"], ignore_eos=True)
        outs = llm.generate(requests, params, use_tqdm=False)
        cfg = llm.llm_engine.vllm_config
        repeat: dict = {}
        if spec.get("repeat"):
            # the same requests again (prefix-cache hits through the images' mm hashes), then
            # the first prompt with another image in the same place (its blocks must miss)
            before = _hits(llm)
            again = llm.generate(requests, params, use_tqdm=False)
            repeat["tokens"] = [list(o.outputs[0].token_ids) for o in again]
            repeat["hits_same"] = _hits(llm) - before
            other = dict(requests[0], multi_modal_data={
                "image": Image.open(spec["other_image"]).convert("RGB")})
            before = _hits(llm)
            llm.generate([other], params, use_tqdm=False)
            repeat["hits_other_image"] = _hits(llm) - before
        ledger = simulator.ledger().snapshot() if simulator.active() else {"launches": {}}
        result = {
            "prompt_token_ids": [list(o.prompt_token_ids) for o in outs],
            "tokens": [list(o.outputs[0].token_ids) for o in outs],
            "repeat": repeat,
            "facts": {
                "cudagraph_mode": cfg.compilation_config.cudagraph_mode.name,
                "op_calls": {f"{op}/{backend}": n for (op, backend), n
                             in ascend_ops.call_counts(per_backend=True).items()},
                "npu_launches": dict(ledger["launches"]),
                "simulated": simulator.active(),
            },
        }
    finally:
        close_llm(llm)
        gc.collect()
    with open(argv[1], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
