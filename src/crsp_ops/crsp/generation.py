"""Where the trainer's samples come from: the model in process, or a server reloaded every N steps.

``InProcessGeneration`` wraps the very model being trained in a ``TransformersBackend``: every
sample is on-policy. ``ServerGeneration`` saves the weights, starts an OpenAI-compatible server
on them through the ``ServerManager`` and, every ``reload_interval`` steps, restarts it on a
fresh copy. Between reloads the samples come from older weights; their ``processed`` log-probs
are the behaviour policy's, so the trainer's importance weights ``π_new / π_old`` correct for
the staleness.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from crsp_ops.inference.backend import GenerationBackend
from crsp_ops.inference.openai_backend import OpenAIServerBackend, OpenAIServerSettings
from crsp_ops.inference.server_manager import ServerConfig, ServerManager
from crsp_ops.inference.transformers_backend import TransformersBackend

logger = logging.getLogger(__name__)

SERVED_MODEL_NAME = "crsp-policy"
LOCAL_SERVER_COMMAND = (sys.executable, "-m", "crsp_ops.inference.local_server",
                        "--model", "{model_dir}", "--port", "{port}", "--device", "cpu")


class PolicyGeneration(ABC):
    """A backend serving the policy, plus how it follows the trainer's weights."""

    backend: GenerationBackend
    logprob_semantics: str = "processed"
    policy_step: int = 0  # the trainer step whose weights generate now

    @abstractmethod
    def sync(self, step: int, model: Any) -> bool:
        """Called after the update of ``step``; return True when the weights were reloaded."""

    def close(self) -> None:
        """Release the backend (and the server)."""
        self.backend.close()


class InProcessGeneration(PolicyGeneration):
    """Generate with the trained model itself (always on-policy).

    Args:
        model: the unwrapped policy model (shared with the optimizer, not copied).
        tokenizer: its tokenizer.
        device: where the model lives (``str(accelerator.device)``).
        batch_size: conversations per ``generate`` call.
    """

    def __init__(self, model: Any, tokenizer: Any, *, device: str, batch_size: int) -> None:

        self.backend = TransformersBackend(model, tokenizer, device=device,
                                           logprob_semantics="processed", batch_size=batch_size)

    def sync(self, step: int, model: Any) -> bool:
        """Nothing to copy: the backend holds the trained model."""
        self.policy_step = step
        return False

    def close(self) -> None:
        """Keep the shared model alive (``TransformersBackend.close`` would drop it)."""


def server_command(template: str, *, model_dir: Path, port: int,
                   server_args: tuple[str, ...]) -> tuple[str, ...]:
    """The server argv: the template (or the local server) with placeholders filled.

    Adds the engine's launch flags for rollout log-probs and a fixed served model name unless
    the template sets them.

    >>> server_command("vllm serve {model_dir} --port {port}", model_dir=Path("/m"), port=9,
    ...                server_args=("--logprobs-mode", "processed_logprobs"))[-4:]
    ('--logprobs-mode', 'processed_logprobs', '--served-model-name', 'crsp-policy')
    """
    parts = shlex.split(template) if template.strip() else list(LOCAL_SERVER_COMMAND)
    argv = [part.format(model_dir=model_dir, port=port) for part in parts]
    if server_args and server_args[0] not in argv:
        argv += list(server_args)
    if "--served-model-name" not in argv:
        argv += ["--served-model-name", SERVED_MODEL_NAME]
    return tuple(argv)


class ServerGeneration(PolicyGeneration):
    """Generate through an OpenAI-compatible server restarted on fresh weights every N steps.

    Args:
        model: the unwrapped policy (saved for the server at start and at every reload).
        tokenizer: its tokenizer (saved with the weights; used to read responses).
        weights_root: where served weight copies are written (only the latest is kept).
        command_template: ``train.server_command`` ("" = the project's local server).
        engine: ``vllm`` or ``sglang`` (decides request fields and launch flags).
        port: port on 127.0.0.1.
        reload_interval: restart on new weights after every this many steps.
        step: the trainer step of the initial weights (resume).
    """

    def __init__(self, model: Any, tokenizer: Any, *, weights_root: Path, command_template: str,
                 engine: str, port: int, reload_interval: int, step: int) -> None:

        self.tokenizer = tokenizer
        self.weights_root = Path(weights_root)
        self.command_template = command_template
        self.port = port
        self.reload_interval = reload_interval
        self.settings = OpenAIServerSettings(
            base_url=f"http://127.0.0.1:{port}/v1", model=SERVED_MODEL_NAME, engine=engine,
            logprob_semantics="processed")
        self.manager = None
        self._start(model, step)

    def _start(self, model: Any, step: int) -> None:

        model_dir = self.weights_root / f"step-{step:06d}"
        model.save_pretrained(model_dir)
        self.tokenizer.save_pretrained(model_dir)
        command = server_command(self.command_template, model_dir=model_dir, port=self.port,
                                 server_args=self.settings.request_options().server_args)
        self.manager = ServerManager(ServerConfig(f"http://127.0.0.1:{self.port}",
                                                  command=command)).start()
        self.backend = OpenAIServerBackend(self.settings, server=self.manager,
                                           tokenizer=self.tokenizer)
        for old in self.weights_root.glob("step-*"):
            if old != model_dir:
                shutil.rmtree(old, ignore_errors=True)
        self.policy_step = step
        logger.info("server on %s serves the weights of step %d", model_dir, step)

    def sync(self, step: int, model: Any) -> bool:
        """Restart the server on the current weights every ``reload_interval`` steps."""
        if step % self.reload_interval:
            return False
        self.close()
        self._start(model, step)
        return True

    def close(self) -> None:
        """Stop the backend and the server."""
        self.backend.close()
        if self.manager is not None:
            self.manager.stop()
            self.manager = None
