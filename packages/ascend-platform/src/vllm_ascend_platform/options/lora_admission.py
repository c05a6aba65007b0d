# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Refuse a bad LoRA adapter when its request is admitted, not inside a model step.

vLLM 0.34 loads a request's adapter in the worker, during the step that first schedules it
(``vllm/lora/worker_manager.py``, ``_load_adapter``). A missing path or a rank above
``max_lora_rank`` raises there, the request stays scheduled, and every later step fails again:
the engine stops serving. This patch extends ``InputProcessor._validate_lora`` (the front end's
per-request check, ``vllm/v1/engine/input_processor.py``) with the same checks the worker makes
(``PEFTHelper.from_local_dir`` + ``validate_legal``, ``vllm/lora/peft_helper.py``) for adapters
on the local file system, so the caller gets a ``VLLMValidationError`` naming the adapter and
the fix, and the engine never sees the request. Hub ids are left to the worker (resolving them
would download here). An adapter made for another architecture or size is refused too: its
tensor shapes are compared with the served checkpoint's (``options/lora_shapes.py``).

The OpenAI server's ``/v1/load_lora_adapter`` (and ``--lora-modules``) go straight to the
engine's ``add_lora`` (``vllm/entrypoints/openai/models/serving.py``), which answers a rank above
``max_lora_rank`` with a 500 and accepts a misfit adapter that later fails a step. The
``lora-load-endpoint`` patch runs the same checks in ``_check_load_lora_adapter_request`` and
answers 400 naming the problem; a missing path keeps vLLM's own 404.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

_checked: set[tuple[str, int]] = set()


def _local(path: str) -> bool:
    return path.startswith(("/", "./", "../", "~")) or os.path.exists(path)


def check_adapter(lora_request: Any, lora_config: Any, model: str | None = None) -> None:
    """Raise ``VLLMValidationError`` when a local adapter is missing or illegal for
    ``lora_config`` (rank above ``max_lora_rank``, bias, unsupported PEFT features) or, with
    ``model`` (the served checkpoint's local directory), does not fit its weight shapes."""
    from vllm.exceptions import VLLMValidationError
    from vllm.lora.peft_helper import PEFTHelper

    from vllm_ascend_platform.options.lora_shapes import adapter_mismatches

    path = os.path.expanduser(lora_request.lora_path)
    key = (path, lora_request.lora_int_id)
    if key in _checked or not _local(path):
        return
    if not os.path.isfile(os.path.join(path, "adapter_config.json")):
        raise VLLMValidationError(
            f"LoRA adapter {lora_request.lora_name!r}: no adapter_config.json at {path!r}; "
            "pass the directory peft's save_pretrained wrote")
    try:
        PEFTHelper.from_local_dir(path, None).validate_legal(lora_config)
    except ValueError as exc:
        raise VLLMValidationError(
            f"LoRA adapter {lora_request.lora_name!r} ({path}): {exc} Raise --max-lora-rank "
            "or use a compatible adapter.") from exc
    problems, compared = adapter_mismatches(path, model) if model else ([], 0)
    if problems:
        raise VLLMValidationError(
            f"LoRA adapter {lora_request.lora_name!r} ({path}) does not fit the served model "
            f"{model}: {problems[0]} ({len(problems)} of {compared} tensors); it was made for "
            "another architecture or size. Use an adapter trained on this model.")
    _checked.add(key)


def looks_like_validate_lora(target: Any) -> bool:
    if getattr(target, "_ascend_lora_admission", False):
        return True
    return list(inspect.signature(target).parameters) == ["self", "lora_request"]


# patch: lora-admission (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def apply_validate_lora() -> None:
    from vllm.v1.engine.input_processor import InputProcessor

    upstream = InputProcessor._validate_lora

    def _validate_lora(self, lora_request):
        upstream(self, lora_request)
        if lora_request is not None and self.lora_config:
            check_adapter(lora_request, self.lora_config, self.model_config.model)

    _validate_lora._ascend_lora_admission = True  # type: ignore[attr-defined]
    InputProcessor._validate_lora = _validate_lora





def looks_like_load_check(target: Any) -> bool:
    if getattr(target, "_ascend_lora_admission", False):
        return True
    return (inspect.iscoroutinefunction(target)
            and list(inspect.signature(target).parameters) == ["self", "request"])


# patch: lora-load-endpoint (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def apply_load_check() -> None:
    from http import HTTPStatus

    from vllm.entrypoints.openai.models.serving import OpenAIServingModels
    from vllm.entrypoints.serve import create_error_response
    from vllm.exceptions import VLLMValidationError
    from vllm.lora.request import LoRARequest

    upstream = OpenAIServingModels._check_load_lora_adapter_request

    async def _check_load_lora_adapter_request(self, request):
        error = await upstream(self, request)
        if error is not None or not os.path.exists(os.path.expanduser(request.lora_path)):
            return error  # vLLM's own answers, including its 404 for a missing adapter
        lora_config = self.engine_client.vllm_config.lora_config
        try:
            check_adapter(LoRARequest(request.lora_name, 1, request.lora_path), lora_config,
                          self.model_config.model)
        except VLLMValidationError as exc:
            return create_error_response(message=str(exc), err_type="BadRequestError",
                                         status_code=HTTPStatus.BAD_REQUEST)
        return None

    _check_load_lora_adapter_request._ascend_lora_admission = True  # type: ignore[attr-defined]
    OpenAIServingModels._check_load_lora_adapter_request = _check_load_lora_adapter_request
