# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM 0.33's own RejectionSampler (its Triton kernels) on the CPU, as a test oracle.

Triton has no active driver here, so vLLM disables it; Triton's interpreter (``TRITON_INTERPRET=1``)
runs kernels on CPU tensors with numpy. Before vLLM is imported, this script makes
``vllm.triton_utils`` see exactly one active Triton backend (vLLM 0.33's
``vllm/triton_utils/importing.py`` keeps Triton when one driver other than "cpu" is active; its
"cpu" backend rule applies only to builds whose version names cpu), so ``RejectionSampler``
keeps its real Triton kernels and the interpreter executes them. Run as a
child process: ``python _vllm_rejection_oracle.py OUT.pt CASE_NAME...``; writes
``{name: spec_cases.run(RejectionSampler, CASES[name])}``. Top-k/top-p filtering uses
vLLM's PyTorch implementation (see below).
"""

from __future__ import annotations

import os
import sys
import types

os.environ["TRITON_INTERPRET"] = "1"
os.environ.pop("VLLM_ASCEND_EMULATE", None)
os.environ.pop("VLLM_ASCEND_SIMULATE_NPU", None)

from triton.backends import backends  # noqa: E402


class _InterpreterDriver:
    @staticmethod
    def is_active() -> bool:
        return True


STAND_IN = "interpreter"  # any name but "cpu", which vLLM leaves out of its driver count
backends.setdefault(STAND_IN, types.SimpleNamespace(driver=_InterpreterDriver))

import torch  # noqa: E402
from vllm.triton_utils import importing  # noqa: E402

assert importing.HAS_TRITON, "vLLM did not take the Triton interpreter"
# Top-k/top-p filtering is vLLM's generic sampling op, not part of the rejection rule; its Triton
# kernel does not run in the interpreter, so use vLLM's PyTorch implementation (what vLLM itself
# runs whenever Triton is off, as on CPU).
from vllm.v1.sample.ops import topk_topp_sampler  # noqa: E402

topk_topp_sampler.HAS_TRITON = False
from vllm.v1.sample.rejection_sampler import RejectionSampler  # noqa: E402

# vLLM has made its choice; take the stand-in away again so torch.compile (vLLM compiles its
# logprob gathering) sees the real Triton backends, as it does in any vLLM CPU process.
del backends[STAND_IN]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_cases import CASES, run  # noqa: E402

if __name__ == "__main__":
    out_path, names = sys.argv[1], sys.argv[2:]
    torch.save({name: run(RejectionSampler, CASES[name]) for name in names}, out_path)
