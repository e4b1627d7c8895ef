"""vLLM inside this process (TRL's ``vllm_mode="colocate"``): weights handed over in memory.

No copy to disk or socket per update; steering through the same processor and token table as a
vLLM server. vLLM is imported only when a backend is built.

Design: docs/design/inference.md#vllm_colocated.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from crsp_ops.config.errors import ConfigError
from crsp_ops.inference.backend import GenerationBackend, Message
from crsp_ops.inference.completions import Completion, SamplingParams
from crsp_ops.inference.hf_chat import check_template_kwargs, encode_chat
from crsp_ops.steering.bias import STEER_DELTAS_KEY
from crsp_ops.steering.table import TOKEN_CLUSTERS_ENV, load_table_and_count
from crsp_ops.steering.token_rules import eos_token_ids
from crsp_ops.steering.vllm_runner import PROCESSOR_CLASSES, VLLM_RUNNER_ENV

logger = logging.getLogger(__name__)

IN_PROCESS_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", VLLM_RUNNER_ENV: "0"}
"""vLLM's engine core in this process (the weights are shared by reference), V1 runner."""


class ColocatedVLLMBackend(GenerationBackend):
    """Generate with a ``vllm.LLM`` living in this process; new weights are handed in memory.

    Args:
        model_dir: an HF directory (config, tokenizer; the weights too unless
            ``load_format="dummy"``).
        tokenizer: its tokenizer (renders prompts, decodes nothing the engine returns).
        memory_fraction: vLLM's ``gpu_memory_utilization`` (on a CPU host: of host memory).
        dtype: ``auto`` or a torch dtype name for the engine's weights.
        load_format: ``auto`` (read the weights) or ``dummy`` (random; ``load_weights`` follows).
        seed: the engine's seed (calls with ``SamplingParams.seed`` seed each request).
        max_model_len: context of the engine; 0: the model's own.
        sleep_mode: vLLM's sleep mode (CUDA only): weights and KV cache released between
            generations (``sleep``/``wake_up``), TRL's ``vllm_enable_sleep_mode``.
        clusters_dir: the clusters stage's ``token_clusters.npy`` (or its directory) to steer
            with, or ``None`` (then ``deltas`` raise).
        chat_template_kwargs: extra chat-template variables of every prompt.

    Raises:
        ImportError: vLLM is not installed (the config layer refuses this earlier).
        ValueError: ``chat_template_kwargs`` the tokenizer's template cannot take.
    """

    def __init__(self, model_dir: str | os.PathLike, tokenizer: Any, *, memory_fraction: float,
                 dtype: str = "auto", load_format: str = "auto", seed: int = 0,
                 max_model_len: int = 0, sleep_mode: bool = False,
                 clusters_dir: str | os.PathLike | None = None,
                 chat_template_kwargs: Mapping[str, Any] | None = None) -> None:
        os.environ.update(IN_PROCESS_ENV)  # read when the engine is built, below
        from vllm import LLM

        self.tokenizer = tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        check_template_kwargs(tokenizer, self.chat_template_kwargs)
        self.n_clusters = None
        processors = []
        if clusters_dir is not None:
            _, self.n_clusters = load_table_and_count(clusters_dir)
            os.environ[TOKEN_CLUSTERS_ENV] = str(Path(clusters_dir).resolve())
            processors = [PROCESSOR_CLASSES["v1"]]
        generation_eos = getattr(_generation_config(model_dir), "eos_token_id", None)
        self.stop_ids = sorted(eos_token_ids(tokenizer, generation_eos))
        self.sleep_mode = sleep_mode
        check_cpu_share(memory_fraction)
        self.llm = LLM(model=str(model_dir), dtype=dtype, load_format=load_format, seed=seed,
                       gpu_memory_utilization=memory_fraction,
                       logprobs_mode="processed_logprobs", enable_prefix_caching=True,
                       enable_sleep_mode=sleep_mode, logits_processors=processors or None,
                       **({"max_model_len": max_model_len} if max_model_len else {}))
        self._asleep = False

    def generate(self, conversations: Sequence[Sequence[Message]], params: SamplingParams,
                 deltas: Sequence[float] | None = None) -> list[Completion]:
        """Return one completion per conversation, in order (see ``GenerationBackend``)."""
        from vllm.inputs import TokensPrompt

        if self.llm is None:
            raise RuntimeError("generate() after close()")
        if deltas is not None and self.n_clusters is None:
            raise ValueError("deltas given but this backend was built without a token table")
        if deltas is not None and len(deltas) != self.n_clusters:
            raise ValueError(f"{len(deltas)} deltas for a table of {self.n_clusters} clusters")
        prompts = [encode_chat(self.tokenizer, conversation, self.chat_template_kwargs)[0]
                   for conversation in conversations]
        requests = [vllm_sampling(params, row, self.stop_ids, deltas)
                    for row in range(len(prompts))]
        self._wake()
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in prompts],
                                    requests, use_tqdm=False)
        self._sleep()
        return [self._completion(prompt, output.outputs[0])
                for prompt, output in zip(prompts, outputs, strict=True)]

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load ``(name, tensor)`` pairs (HF checkpoint names) into the engine, in memory.

        Every parameter the engine holds must be among them (a partial update is vLLM's
        error). The prefix cache is reset after: its entries were computed by the old weights.
        """
        self._wake(tags=["weights"])
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights)})
        self.llm.reset_prefix_cache()
        self._sleep()

    def close(self) -> None:
        """Drop the engine (its memory goes with the last reference). Safe to call twice."""
        self.llm = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _wake(self, tags: list[str] | None = None) -> None:
        if self._asleep:
            self.llm.wake_up(tags=tags)
            self._asleep = tags is not None  # the KV cache is woken by the next generate

    def _sleep(self) -> None:
        if self.sleep_mode:
            self.llm.sleep(level=1)
            self._asleep = True

    def _completion(self, prompt: list[int], output: Any) -> Completion:
        token_ids = tuple(int(token) for token in output.token_ids)
        logprobs = tuple(float(step[token].logprob)
                         for token, step in zip(token_ids, output.logprobs or (), strict=True))
        if len(logprobs) != len(token_ids):
            raise RuntimeError(f"vLLM returned {len(logprobs)} log-probs for {len(token_ids)} "
                               "tokens")
        if output.finish_reason not in ("stop", "length"):
            raise RuntimeError(f"vLLM finished a request with {output.finish_reason!r}")
        return Completion(
            text=self.tokenizer.decode(list(token_ids), skip_special_tokens=True),
            prompt_token_ids=tuple(prompt), token_ids=token_ids, logprobs=logprobs,
            finish_reason=output.finish_reason, logprob_semantics="processed",
            extra={"processed_logprobs": logprobs})


def check_cpu_share(memory_fraction: float) -> None:
    """Refuse a host-memory share that this process already fills (vLLM's CPU worker only).

    On a CPU host vLLM sizes its KV cache as ``memory_fraction`` x host memory minus the
    resident memory of the process it runs in, here the trainer's own (model, optimizer).

    Raises:
        ConfigError: no KV cache would remain, naming the share that would leave some.
    """
    if torch.cuda.is_available():
        return
    import psutil

    total = psutil.virtual_memory().total
    resident = psutil.Process().memory_info().rss
    if memory_fraction * total <= resident:
        raise ConfigError(
            f"generation.memory_fraction={memory_fraction} gives the colocated vLLM engine "
            f"{memory_fraction * total / 2**30:.2f} GiB of host memory, but vLLM's CPU worker "
            f"counts this process's {resident / 2**30:.2f} GiB in it, leaving no KV cache: "
            f"raise it above {resident / total + 0.02:.2f}")


def vllm_sampling(params: SamplingParams, row: int, stop_ids: Sequence[int],
                  deltas: Sequence[float] | None = None) -> Any:
    """The ``vllm.SamplingParams`` of row ``row`` of a call (seeded: ``seed + row``).

    One log-prob per token (``logprobs=0``: the sampled token's own); the stop ids end a
    response and are kept in its token ids; the steering deltas ride in ``extra_args``.
    """
    from vllm import SamplingParams as VLLMSamplingParams

    return VLLMSamplingParams(
        n=1, max_tokens=params.max_new_tokens, temperature=params.temperature,
        top_p=params.top_p, top_k=params.top_k or -1, min_p=params.min_p,
        repetition_penalty=params.repetition_penalty,
        seed=None if params.seed is None else params.seed + row, logprobs=0,
        stop_token_ids=list(stop_ids), skip_special_tokens=True,
        extra_args=None if deltas is None else {STEER_DELTAS_KEY: [float(d) for d in deltas]})


def _generation_config(model_dir: str | os.PathLike) -> Any:
    """The directory's ``GenerationConfig``, or ``None`` where it has none."""
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(model_dir, local_files_only=True)
    except OSError:
        return None
