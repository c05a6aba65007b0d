# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up refusals of vLLM 0.34 sampling features our host modes have no stand-in for.

In CPU emulation and on the simulated NPU, Model Runner V2's Triton kernels run as the host
stand-ins of ``host/mrv2_kernels.py`` and ``host/mrv2_spec_decode.py`` (docs/model-runner-v2.md,
"Kernel table"). Two configurations reach kernels without one, and used to fail at the first
step that needs them (the engine dies mid-request):

* ``speculative_config.rejection_sample_method`` other than ``"standard"``
  (``vllm/config/speculative.py``: ``"synthetic"`` acceptance rates, ``"block"`` verification,
  ``"fly"``): vLLM's ``rejection_sample`` (``vllm/v1/worker/gpu/spec_decode/
  rejection_sampler_utils.py``) runs them in its Triton kernels; our stand-in implements the
  standard rule on ``ascend_ops.rejection_sample`` only.
* ``watermark_config`` (text watermarking, ``vllm/config/watermarking.py``) together with
  ``speculative_config``: the verification is then watermarked (``RejectionSampler(
  watermark_key=...)`` passes ``contexts`` / ``watermarking`` to ``rejection_sample``), which our
  stand-in does not implement. Watermarking without drafts runs on the host
  (``GPUWatermarkSampler``, ``vllm/v1/watermarking/gpu_sampler.py``, through the sampler's
  stand-ins; checked with SmolLM2 in emulation) and is not refused.

Both are refused here when the configuration is checked (``options/features.py``), by name and
with what to change. On an NPU vLLM's own kernels run (triton-ascend), so nothing is refused
there; vLLM 0.33 (Model Runner V1) has neither option on our path (its rejection sampler is
ours and ``rejection_sample_method`` is not read), so nothing is refused there either.
"""

from __future__ import annotations

from typing import Any

from vllm_ascend_platform.options.refusal import Refusal


def _host_mrv2() -> bool:
    """True where MRv2's kernels run as our host stand-ins (``NPUPlatform.
    register_triton_kernel_overrides``: host mode, no Triton)."""
    from vllm_ascend_platform import envs

    if not envs.host_device():
        return False
    from vllm.triton_utils import HAS_TRITON

    return not HAS_TRITON


def _rejection_method(vllm_config: Any) -> str:
    spec = getattr(vllm_config, "speculative_config", None)
    if spec is None:
        return "standard"
    return getattr(spec, "rejection_sample_method", "standard") or "standard"


def _non_standard_rejection(vllm_config: Any, _ascend: Any) -> bool:
    return _rejection_method(vllm_config) != "standard" and _host_mrv2()


def _watermarked_verification(vllm_config: Any, _ascend: Any) -> bool:
    return (getattr(vllm_config, "watermark_config", None) is not None
            and getattr(vllm_config, "speculative_config", None) is not None and _host_mrv2())


REJECTION_FIX = ("CPU emulation and the simulated NPU verify drafts with the standard rule only: "
                 "drop rejection_sample_method (or set it to 'standard'), and with it "
                 "synthetic_acceptance_rates / synthetic_acceptance_length / fly_*")
WATERMARK_FIX = ("CPU emulation and the simulated NPU verify drafts without watermarking: drop "
                 "--speculative-config to watermark, or drop --watermark-config to speculate")

REFUSALS: tuple[Refusal, ...] = (
    Refusal("--speculative-config rejection_sample_method ('synthetic', 'block', 'fly')",
            _non_standard_rejection, REJECTION_FIX),
    Refusal("--watermark-config with --speculative-config (watermarked draft verification)",
            _watermarked_verification, WATERMARK_FIX),
)
