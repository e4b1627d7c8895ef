"""Where the trainer's samples come from: the model in process, a server, or colocated vLLM.

In process every sample is on-policy; a server or the colocated engine samples from weights
that may lag, and the update's importance weights correct for it.

Design: docs/design/trainer.md#generation.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.steering_config import GenerationSettings
from crsp_ops.errors import RunFailure
from crsp_ops.inference.backend import GenerationBackend
from crsp_ops.inference.open_backend import client_settings, server_manager
from crsp_ops.inference.openai_backend import OpenAIServerBackend
from crsp_ops.inference.server_launch import (
    ENGINE_COMMANDS,
    STEERING_ARGS,
    missing_server_message,
    server_launch,
    server_root,
    with_port_offset,
)
from crsp_ops.inference.server_manager import probe_health
from crsp_ops.inference.transformers_backend import TransformersBackend
from crsp_ops.inference.vllm_colocated import ColocatedVLLMBackend
from crsp_ops.inference.weight_update import (
    IN_PLACE_ENGINES,
    VLLM_DEV_MODE_ENV,
    WeightUpdateError,
    http_post,
    update_weights,
)
from crsp_ops.steering.vllm_runner import installed_vllm_version

logger = logging.getLogger(__name__)

SERVED_MODEL_NAME = "crsp-policy"
LOCAL_SERVER_COMMAND = ENGINE_COMMANDS["local"] + " --device cpu"
CURRENT_LINK = "current"  # weights_root/current -> the step directory being served


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
        chat_template_kwargs: extra chat-template variables of every prompt.
    """

    def __init__(self, model: Any, tokenizer: Any, *, device: str, batch_size: int,
                 chat_template_kwargs: dict[str, Any] | None = None) -> None:
        self.backend = TransformersBackend(model, tokenizer, device=device,
                                           logprob_semantics="processed", batch_size=batch_size,
                                           chat_template_kwargs=chat_template_kwargs)

    def sync(self, step: int, model: Any) -> bool:
        """Nothing to copy: the backend holds the trained model."""
        self.policy_step = step
        return False

    def close(self) -> None:
        """Keep the shared model alive (``TransformersBackend.close`` would drop it)."""


def policy_server_command(generation: GenerationSettings) -> str | None:
    """The command that serves the policy, or ``None`` for a server already running.

    ``generation.server_command`` when set; the project's own server for ``engine=local``;
    otherwise none: a vLLM or SGLang server must then already answer at ``base_url`` (never a
    silent stand-in for the engine that was asked for).
    """
    if generation.server_command:
        return generation.server_command
    return LOCAL_SERVER_COMMAND if generation.engine == "local" else None


def policy_server_launch(generation: GenerationSettings, *, model_dir: Path, base_url: str,
                         server_args: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The policy server's argv and environment.

    ``policy_server_command``, launched as every managed server is (``server_launch``:
    placeholders, ``NAME=value`` words, the vLLM runner); the engine's launch flags for rollout
    log-probs and a fixed served model name are added unless the command sets them, and a vLLM
    server gets ``VLLM_SERVER_DEV_MODE=1`` (its in-place weight-update routes).

    Raises:
        ConfigError: no command for this engine (see ``policy_server_command``), or a bad one.
    """
    command = policy_server_command(generation)
    if command is None:
        raise ConfigError(missing_server_message(generation.engine, base_url))
    if "{vllm_processor}" in command:
        raise ConfigError(
            "generation.server_command loads the steering processor ({vllm_processor}), which "
            "needs a token table, but the trainer's policy server does not steer: drop "
            f"{STEERING_ARGS['vllm']!r} from it for train")
    argv, env = server_launch(generation, model_dir=model_dir, token_clusters=None,
                              vllm_version=installed_vllm_version(), command=command,
                              base_url=base_url)
    argv = list(argv)
    if server_args and server_args[0] not in argv:
        argv += list(server_args)
    if "--served-model-name" not in argv:
        argv += ["--served-model-name", SERVED_MODEL_NAME]
    if generation.engine == "vllm":
        env.setdefault(VLLM_DEV_MODE_ENV, "1")
    return tuple(argv), env


def write_weights(model: Any, tokenizer: Any, weights_root: Path, step: int) -> Path:
    """Save ``model`` and ``tokenizer`` as ``weights_root/step-NNNNNN``, atomically.

    Written under a temporary name and renamed once complete, so an engine is never offered
    (nor re-reads on a rollback) a half-written checkpoint.
    """
    final = weights_root / f"step-{step:06d}"
    partial = weights_root / f".partial-{final.name}"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(partial, final)
    return final


def point_current(weights_root: Path, target: Path) -> Path:
    """Make ``weights_root/current`` a link to ``target`` (replaced atomically); return it.

    The server is launched on this link, so a restart after a crash serves the latest weights.
    """
    link = weights_root / CURRENT_LINK
    staged = weights_root / f".{CURRENT_LINK}-new"
    staged.unlink(missing_ok=True)
    staged.symlink_to(target.name)
    os.replace(staged, link)
    return link


class ServerGeneration(PolicyGeneration):
    """Generate through an OpenAI-compatible server that follows the trainer's weights.

    The server and its client come from the ``generation`` settings through the same road as
    evolve's (``open_backend.server_manager`` / ``client_settings``); rank ``r`` of a
    multi-process run listens on ``generation.base_url``'s port + ``r``.

    Every ``reload_interval`` steps the weights are written (``write_weights``) and loaded into
    the running engine in place (``weight_update``: vLLM's dev-mode reload, SGLang's disk
    update); when that fails, or for engines without an in-place path, or with
    ``in_place=False``, the server is restarted on them instead (the reason is logged). A
    server that was already running (no command) cannot be restarted: a failed update stops
    the run.

    Args:
        model: the unwrapped policy (saved for the server at start and at every reload).
        tokenizer: its tokenizer (saved with the weights; used to read responses).
        weights_root: where served weight copies are written (only the latest is kept).
        generation: the ``generation`` settings (engine, command, base URL, timeouts).
        rank: the process index (port offset).
        reload_interval: follow the weights after every this many steps.
        step: the trainer step of the initial weights (resume).
        in_place: try the engine's in-place update before a restart.

    Raises:
        ConfigError: no server command and no server at the base URL.
    """

    def __init__(self, model: Any, tokenizer: Any, *, weights_root: Path,
                 generation: GenerationSettings, rank: int, reload_interval: int,
                 step: int, in_place: bool = True) -> None:
        self.tokenizer = tokenizer
        self.weights_root = Path(weights_root)
        self.weights_root.mkdir(parents=True, exist_ok=True)
        self.generation = generation
        self.base_url = with_port_offset(generation.base_url, rank)
        self.reload_interval = reload_interval
        self.in_place = in_place and generation.engine in IN_PLACE_ENGINES
        self.settings = client_settings(generation, base_url=self.base_url,
                                        model=SERVED_MODEL_NAME, logprob_semantics="processed")
        self.manager = None
        self.backend = None
        self.stats = {"in_place_updates": 0, "restarts": 0, "fallbacks": 0, "update_s": 0.0}
        model_dir = write_weights(model, tokenizer, self.weights_root, step)
        self._start(model_dir, step)

    def _start(self, model_dir: Path, step: int) -> None:
        command = policy_server_command(self.generation)
        if command is None and not probe_health(server_root(self.base_url) +
                                                self.generation.health_path, 5.0):
            raise ConfigError(missing_server_message(self.generation.engine, self.base_url))
        argv, env = (None, None)
        if command is not None:
            argv, env = policy_server_launch(
                self.generation, model_dir=point_current(self.weights_root, model_dir),
                base_url=self.base_url,
                server_args=self.settings.request_options().server_args)
        self.manager = server_manager(self.generation, base_url=self.base_url, command=argv,
                                      env=env or None).start()
        self.backend = OpenAIServerBackend(self.settings, server=self.manager,
                                           tokenizer=self.tokenizer)
        if command is None:  # someone else's server: load our weights into it
            self._update_in_place(model_dir, step, fallback=False)
        self._served(model_dir, step)

    def _served(self, model_dir: Path, step: int) -> None:
        point_current(self.weights_root, model_dir)
        for old in self.weights_root.glob("step-*"):
            if old != model_dir:
                shutil.rmtree(old, ignore_errors=True)
        self.policy_step = step
        logger.info("server at %s serves the weights of step %d (%s)", self.base_url, step,
                    model_dir)

    def _update_in_place(self, model_dir: Path, step: int, *, fallback: bool) -> bool:
        """Load ``model_dir`` into the running engine; False when a restart must follow."""
        post = http_post(server_root(self.base_url), self.generation.request_timeout_s)
        try:
            update = update_weights(self.generation.engine, post, str(model_dir.resolve()),
                                    version=f"step-{step}")
        except WeightUpdateError as error:
            if not (fallback and self.manager.owns_process):
                raise RunFailure(f"in-place weight update of the server at {self.base_url} "
                                 f"failed and it is not ours to restart: {error}") from error
            self.stats["fallbacks"] += 1
            logger.warning("in-place weight update failed, restarting the server instead: %s",
                           error)
            return False
        self.stats["in_place_updates"] += 1
        logger.info("weights of step %d loaded in place in %.2fs (%s)%s", step, update.seconds,
                    " -> ".join(update.calls), f"; {update.note}" if update.note else "")
        return True

    def sync(self, step: int, model: Any) -> bool:
        """Follow the weights every ``reload_interval`` steps: in place, else a restart."""
        if step % self.reload_interval:
            return False
        started = time.perf_counter()
        model_dir = write_weights(model, self.tokenizer, self.weights_root, step)
        if self.in_place and self._update_in_place(model_dir, step, fallback=True):
            self._served(model_dir, step)
        else:
            self.close()
            self._start(model_dir, step)
            self.stats["restarts"] += 1
        self.stats["update_s"] = time.perf_counter() - started  # writing included
        return True

    def close(self) -> None:
        """Stop the backend and the server."""
        if self.backend is not None:
            self.backend.close()
        if self.manager is not None:
            self.manager.stop()
            self.manager = None


def exported_weights(exported: Any) -> dict[str, Any]:
    """The full HF-named weights of what the trainer exports, in memory (no copy).

    A plain model's state dict; a LoRA model's merged weights or a sharded policy's gathered
    replica through their ``hf_weights``.
    """
    hf_weights = getattr(exported, "hf_weights", None)
    return hf_weights() if hf_weights is not None else exported.state_dict()


def write_engine_dir(exported: Any, tokenizer: Any, directory: Path) -> Path:
    """An HF directory without weights: the config, generation config and tokenizer."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    exported.config.save_pretrained(directory)
    generation_config = getattr(exported, "generation_config", None)
    if generation_config is not None:
        generation_config.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


class ColocatedGeneration(PolicyGeneration):
    """Generate with vLLM in this process, handed the trainer's weights in memory every step.

    Args:
        exported: what the trainer exports (``PolicyParts.exported()``): its config names the
            architecture; its weights are loaded at start and after every step.
        tokenizer: the policy's tokenizer.
        engine_dir: where the config and tokenizer the engine starts on are written.
        generation: the ``generation`` settings (memory share, dtype, seed, sleep mode).
        step: the trainer step of the initial weights (resume).
        chat_template_kwargs: extra chat-template variables of every prompt.

    The engine runs in the weights' dtype unless ``generation.dtype`` names one.
    """

    def __init__(self, exported: Any, tokenizer: Any, *, engine_dir: Path,
                 generation: GenerationSettings, step: int,
                 chat_template_kwargs: dict[str, Any] | None = None) -> None:
        weights = exported_weights(exported)
        dtype = generation.dtype if generation.dtype != "auto" else \
            str(next(iter(weights.values())).dtype).removeprefix("torch.")
        started = time.perf_counter()
        self.backend = ColocatedVLLMBackend(
            write_engine_dir(exported, tokenizer, engine_dir), tokenizer,
            memory_fraction=generation.memory_fraction, dtype=dtype, load_format="dummy",
            seed=generation.seed, sleep_mode=generation.vllm_sleep_mode,
            chat_template_kwargs=chat_template_kwargs)
        self.stats = {"in_memory_updates": 0, "update_s": 0.0,
                      "engine_start_s": time.perf_counter() - started}
        self._hand_over(weights, step)
        logger.info("colocated vLLM engine started in %.1fs (%s, memory share %.2f)",
                    self.stats["engine_start_s"], dtype, generation.memory_fraction)

    def _hand_over(self, weights: dict[str, Any], step: int) -> None:
        started = time.perf_counter()
        self.backend.load_weights(weights.items())
        self.stats["update_s"] = time.perf_counter() - started
        self.stats["in_memory_updates"] += 1
        self.policy_step = step

    def sync(self, step: int, model: Any) -> bool:
        """Hand the weights of ``step`` to the engine in memory (every step, as TRL does)."""
        self._hand_over(exported_weights(model), step)
        return True
