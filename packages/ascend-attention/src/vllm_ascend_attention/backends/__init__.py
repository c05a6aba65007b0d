"""Attention backend implementations, one per module."""
