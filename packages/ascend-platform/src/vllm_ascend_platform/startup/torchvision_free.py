# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multimodal processing without torchvision: transformers' PIL backend for the Qwen2-VL family.

vLLM 0.34's ``qwen2_vl.py`` (and the models that import from it: Qwen2.5-VL, ...) imports
``smart_resize`` from ``transformers.models.qwen2_vl.image_processing_qwen2_vl``, transformers'
torchvision backend, and ``Qwen2VLProcessor.from_pretrained`` loads the torchvision-only
``Qwen2VLVideoProcessor``. PyPI's torchvision wheel is a CUDA build that does not load beside
CPU torch ("operator torchvision::nms does not exist"), so on a host without a matching
torchvision these models would not even import. transformers 5 ships a PIL backend
(``image_processing_pil_qwen2_vl.py``: ``Qwen2VLImageProcessorPil`` with its own
``smart_resize``, the same resize rule), which this module puts in place, **only when
``import torchvision`` fails**:

* ``sys.modules["transformers.models.qwen2_vl.image_processing_qwen2_vl"]`` becomes a module
  whose names come from the PIL module (``Qwen2VLImageProcessor`` is ``Qwen2VLImageProcessorPil``);
* ``AutoVideoProcessor`` gets a stand-in (``VideoInputNeedsTorchvision``) registered under the name
  ``Qwen2VLVideoProcessor`` (transformers looks registered classes up by name first,
  ``video_processor_class_from_name``), and ``transformers.VideoProcessorMixin`` is exported
  (the processor's type check looks it up there): it satisfies the processor's constructor and vLLM's
  ``get_supported_mm_processor_kwargs``, and refuses any video, naming torchvision.

With torchvision importable nothing changes: transformers' torchvision backend and video
processor run as upstream. Declared as patch ``torchvision-free-processors``
(``patches/declarations.py``).
"""

from __future__ import annotations

import logging
import sys
import types
from typing import Any

logger = logging.getLogger("vllm.ascend")

TORCHVISION_MODULE = "transformers.models.qwen2_vl.image_processing_qwen2_vl"
PIL_MODULE = "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl"
VIDEO_PROCESSOR_NAME = "Qwen2VLVideoProcessor"
VIDEO_REFUSAL = ("video input needs torchvision (transformers' Qwen2-VL video processor is "
                 "torchvision-only); install a torchvision build matching torch, or send images")


def torchvision_importable() -> bool:
    """True when ``import torchvision`` succeeds (a CUDA wheel beside CPU torch raises
    RuntimeError at import, not ImportError: any exception counts as not importable)."""
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - see the docstring
        return False
    return True


def looks_like_pil_backend(obj: Any) -> bool:
    """Drift check (target: ``AutoVideoProcessor.register``): registration is callable and the
    PIL module still has ``Qwen2VLImageProcessorPil`` and ``smart_resize``."""
    import importlib

    pil = importlib.import_module(PIL_MODULE)
    return (callable(obj) and callable(getattr(pil, "smart_resize", None))
            and isinstance(getattr(pil, "Qwen2VLImageProcessorPil", None), type))


def _video_stand_in_class() -> type:
    """:class:`VideoInputNeedsTorchvision`, built on transformers' ``VideoProcessorMixin``
    (``video_processing_utils.py``, importable without torchvision) so that
    ``ProcessorMixin.check_argument_for_proper_class`` accepts it."""
    from transformers.processing_utils import VideosKwargs
    from transformers.video_processing_utils import VideoProcessorMixin

    class VideoInputNeedsTorchvision(VideoProcessorMixin):
        """Stands in for ``Qwen2VLVideoProcessor`` when torchvision cannot be imported.

        Keeps the patch geometry of the video processor config (``patch_size``,
        ``temporal_patch_size``, ``merge_size``, ``min_pixels`` / ``max_pixels``), exposes
        ``valid_kwargs`` (transformers' ``VideosKwargs``, which vLLM's
        ``get_supported_mm_processor_kwargs`` reads) and raises ValueError naming torchvision
        when called on videos.
        """

        valid_kwargs = VideosKwargs
        model_input_names = ["pixel_values_videos", "video_grid_thw"]

        def __init__(self, **kwargs: Any) -> None:
            self.patch_size = kwargs.pop("patch_size", 14)
            self.temporal_patch_size = kwargs.pop("temporal_patch_size", 2)
            self.merge_size = kwargs.pop("merge_size", 2)
            self.min_pixels = kwargs.pop("min_pixels", None)
            self.max_pixels = kwargs.pop("max_pixels", None)
            self.size = kwargs.pop("size", {})

        @classmethod
        def from_pretrained(cls, *_: Any, **kwargs: Any) -> Any:
            return cls(**kwargs)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            videos = kwargs.get("videos", args[0] if args else None)
            if videos is None:
                from transformers import BatchFeature

                return BatchFeature({})
            raise ValueError(VIDEO_REFUSAL)

        def to_dict(self) -> dict[str, Any]:
            return {"video_processor_type": VIDEO_PROCESSOR_NAME}

    VideoInputNeedsTorchvision.__name__ = VIDEO_PROCESSOR_NAME
    return VideoInputNeedsTorchvision




# patch: torchvision-free-processors
def install_pil_processors() -> bool:
    """Put the PIL backend in place when torchvision cannot be imported (module docstring).

    Returns True when it did, False when torchvision imports (nothing changed). Idempotent.
    """
    if torchvision_importable():
        return False
    import importlib

    from transformers import Qwen2VLConfig
    from transformers.models.auto.video_processing_auto import AutoVideoProcessor

    pil = importlib.import_module(PIL_MODULE)
    if not getattr(sys.modules.get(TORCHVISION_MODULE), "__ascend_pil_backend__", False):
        shim = types.ModuleType(TORCHVISION_MODULE, f"{PIL_MODULE}, in place of torchvision's "
                                "backend (vllm_ascend_platform.startup.torchvision_free)")
        shim.__dict__.update({k: v for k, v in vars(pil).items() if not k.startswith("__")})
        shim.Qwen2VLImageProcessor = pil.Qwen2VLImageProcessorPil  # type: ignore[attr-defined]
        shim.__ascend_pil_backend__ = True  # type: ignore[attr-defined]
        sys.modules[TORCHVISION_MODULE] = shim
    # ProcessorMixin checks a video processor against ``transformers.VideoProcessorMixin``,
    # which transformers exports only with torchvision (processing_utils.py
    # get_possibly_dynamic_module); the class itself imports without it
    from transformers import video_processing_utils

    transformers_module = importlib.import_module("transformers")
    if not hasattr(transformers_module, "VideoProcessorMixin"):
        setattr(transformers_module, "VideoProcessorMixin",  # noqa: B010 (mypy: not exported)
                video_processing_utils.VideoProcessorMixin)
    AutoVideoProcessor.register(Qwen2VLConfig, _video_stand_in_class(), exist_ok=True)
    logger.info("torchvision cannot be imported: the Qwen2-VL family's image processing uses "
                "transformers' PIL backend; video input is refused")
    return True
