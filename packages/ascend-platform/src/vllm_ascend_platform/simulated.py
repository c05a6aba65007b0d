"""Process-wide set-up for simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``).

The platform module calls :func:`install_simulated_npu` when it is imported, i.e. in every vLLM
process that resolves our platform (engine core, spawned TP workers, Ray actors), before any
model code runs. It puts the simulated ``torch_npu`` / ``torch.npu`` in place
(``ascend_ops.simulator.install``, docs/simulated-npu.md) instead of importing the real
torch_npu, with the simulated device's capacity taken from ``VLLM_ASCEND_EMULATE_DEVICE_MEMORY``
(default 8 GiB, at most half the host RAM: the simulated device's tensors are host tensors).

CPU-only torch has no accelerator, so ``torch.accelerator.synchronize()``, ``empty_cache()``,
``empty_host_cache()`` and ``get_memory_info()`` (called unconditionally by vLLM's loaders,
runner and shutdown) raise; here they go to the simulated runtime through ``ascend_ops.device``
(a synchronize is a host sync the simulator counts, and refuses inside a graph capture), and
the cache calls have nothing to release.
"""

from __future__ import annotations

from typing import Any

import torch

_installed = False


def install_simulated_npu() -> Any:
    """Install the simulator and the ``torch.accelerator`` stand-ins (idempotent).

    Returns:
        The simulator's installation handle (``ascend_ops.simulator.install``'s return value).

    Raises:
        ValueError: ``VLLM_ASCEND_EMULATE_DEVICE_MEMORY`` is malformed or too large.
    """
    global _installed
    from ascend_ops import simulator

    from vllm_ascend_platform import envs

    handle = simulator.install(capacity_bytes=envs.emulated_device_memory())
    if _installed:
        return handle

    # Distinct functions: Dynamo keys its handling on the ``synchronize`` object.
    def synchronize(*args: Any, **kwargs: Any) -> None:
        from ascend_ops import device

        device.synchronize()

    def empty_cache(*args: Any, **kwargs: Any) -> None:
        return None

    def empty_host_cache(*args: Any, **kwargs: Any) -> None:
        return None

    def get_memory_info(*args: Any, **kwargs: Any) -> tuple[int, int]:
        from ascend_ops import device

        return device.mem_get_info()

    torch.accelerator.synchronize = synchronize
    torch.accelerator.get_memory_info = get_memory_info
    torch.accelerator.empty_cache = empty_cache
    torch.accelerator.empty_host_cache = empty_host_cache
    _installed = True
    return handle


def account_alloc(nbytes: int) -> None:
    """Tell the simulated device that ``nbytes`` of device memory are now held (weights, KV
    cache): ``mem_get_info`` / ``memory_allocated`` then report them."""
    from ascend_ops import simulator

    simulator.account_alloc(int(nbytes))


def account_free(nbytes: int) -> None:
    """Release ``nbytes`` accounted with :func:`account_alloc`."""
    from ascend_ops import simulator

    simulator.account_free(int(nbytes))
