"""torch.library custom ops (namespace ``ascend``) and their public Python wrappers."""
