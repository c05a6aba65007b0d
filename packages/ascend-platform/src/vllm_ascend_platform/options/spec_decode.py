# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up checks of ``speculative_config`` that vLLM 0.34 itself does not make.

vLLM validates ``num_speculative_tokens > 0`` (pydantic, ``vllm/config/speculative.py``) and
refuses methods it does not know. It accepts, and fails later on (or silently mis-serves), a
draft model whose vocabulary differs from the target's: the rejection sampler compares draft
token ids with target token ids, so the two must index the same vocabulary. EAGLE-3 drafts may
predict over a smaller ``draft_vocab_size`` with a ``d2t`` map to target ids; their embedding
vocabulary (``vocab_size``) is still the target's. Multi-token-prediction (``mtp``) needs the
target checkpoint to carry MTP layers (``num_nextn_predict_layers`` > 0 in its config).
"""

from __future__ import annotations

from typing import Any


class SpeculativeConfigError(ValueError):
    """``speculative_config`` cannot be served; the message names the option and the fix."""


def _hf_text(model_config: Any) -> Any:
    return getattr(model_config, "hf_text_config", None) or getattr(model_config, "hf_config", None)


def check_speculative_config(vllm_config: Any) -> None:
    """Refuse a speculative configuration that cannot give the target's output.

    Raises:
        SpeculativeConfigError: ``num_speculative_tokens`` < 1; a draft model whose vocabulary
            size differs from the target's; method ``mtp`` on a target without MTP layers.
    """
    spec = getattr(vllm_config, "speculative_config", None)
    if spec is None:
        return
    k = spec.num_speculative_tokens
    if k is None or k < 1:
        raise SpeculativeConfigError(
            f"speculative_config num_speculative_tokens={k}: give at least 1 draft token per "
            "step (or drop speculative_config)."
        )
    target = spec.target_model_config
    draft = spec.draft_model_config
    if spec.method == "mtp":
        layers = getattr(_hf_text(target), "num_nextn_predict_layers", 0) or 0
        if layers < 1:
            raise _no_mtp_layers(spec.method, target)
    if draft is None or target is None or draft is target or spec.method == "mtp":
        return
    draft_vocab, target_vocab = draft.get_vocab_size(), target.get_vocab_size()
    if draft_vocab != target_vocab:
        raise SpeculativeConfigError(
            f"speculative_config model {draft.model!r} ({spec.method}) has a vocabulary of "
            f"{draft_vocab} tokens, the target {target.model!r} {target_vocab}; draft and target "
            "token ids must index the same vocabulary. Use a draft trained for this target "
            "(same tokenizer)."
        )


def _no_mtp_layers(method: str, target: Any) -> SpeculativeConfigError:
    return SpeculativeConfigError(
        f"speculative_config method {method!r}: the target model {target.model!r} has no MTP "
        "layers (num_nextn_predict_layers is 0 or absent in its config.json); use a "
        "checkpoint that ships its MTP layers, or another method (ngram, eagle, eagle3)."
    )


MTP_METHODS = ("mtp", "deepseek_mtp")


# patch: mtp-without-layers (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def refuse_mtp_without_layers() -> None:
    """Check MTP's layer count before vLLM's ``SpeculativeConfig.__post_init__`` runs.

    vLLM 0.34's ``SpeculativeConfig.__post_init__`` (``vllm/config/speculative.py``) calls
    ``DraftModelSpeculatorConfig.resolve_num_speculative_tokens``
    (``vllm/v1/worker/gpu/spec_decode/speculator_config.py``), which computes
    ``num_speculative_tokens % n_predict`` with ``n_predict`` = the target's
    ``num_nextn_predict_layers``, so a DeepSeek-V3 config with ``num_nextn_predict_layers: 0``
    fails with ``ZeroDivisionError: integer modulo by zero`` before any platform hook runs. The
    wrapper raises :class:`SpeculativeConfigError` naming the option first (pydantic reports it
    as a validation error of ``SpeculativeConfig`` carrying this message); every other
    configuration goes to vLLM's ``__post_init__`` unchanged. Idempotent.
    """
    from vllm.config.speculative import SpeculativeConfig

    original = SpeculativeConfig.__post_init__
    if getattr(original, "__ascend_mtp_check__", False):
        return

    def __post_init__(self: Any) -> None:
        target = getattr(self, "target_model_config", None)
        if self.method in MTP_METHODS and target is not None:
            layers = getattr(_hf_text(target), "num_nextn_predict_layers", None)
            if layers is not None and layers < 1:
                raise _no_mtp_layers(self.method, target)
        original(self)

    __post_init__.__ascend_mtp_check__ = True  # type: ignore[attr-defined]
    SpeculativeConfig.__post_init__ = __post_init__
