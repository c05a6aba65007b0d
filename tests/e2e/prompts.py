# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The 8 varied e2e prompts: chat-templated questions and raw continuations (prose, code,
a long paragraph), and the number of greedy tokens generated per prompt."""

from __future__ import annotations

NEW_TOKENS = 32

# 8 varied prompts: chat-templated questions and raw continuations (prose, code, a long one).
PROMPTS: list[tuple[str, object]] = [
    ("chat", [{"role": "user", "content": "What is the capital of France?"}]),
    ("text", "The quick brown fox jumps over the lazy dog. Then the fox"),
    ("chat", [{"role": "user", "content": "Write a haiku about the ocean."}]),
    ("text", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("chat", [{"role": "user", "content": "List three primary colors."}]),
    ("text", "In 1969, the first humans landed on"),
    ("chat", [{"role": "system", "content": "You are a patient math tutor who explains every "
               "step of a calculation in plain words, checks the result, and keeps answers "
               "short enough for a student to read in one minute. You never skip a step, you use small "
               "numbers in your examples, and you end with the final answer on its own line."},
              {"role": "user", "content": "What is 12 times 7?"}]),
    ("text", "Photosynthesis is the process by which green plants, algae and some bacteria "
             "turn light energy into chemical energy. In the light-dependent reactions, which "
             "take place in the thylakoid membranes of the chloroplast, water is split, oxygen "
             "is released, and the energy carriers ATP and NADPH are made. In the "
             "light-independent reactions, also called the Calvin cycle, the plant uses ATP "
             "and NADPH to fix carbon dioxide from the air into sugars. The overall result"),
]
