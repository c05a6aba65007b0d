"""Ascend subclasses of vLLM CustomOp layers, registered out of tree by :mod:`vllm_ascend_models`."""
