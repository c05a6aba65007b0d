"""Speculative decoding on Ascend: the rejection sampler over ``ascend_ops`` (docs/spec-decode.md)."""
