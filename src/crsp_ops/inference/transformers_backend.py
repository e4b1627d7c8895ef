"""In-process generation with a transformers causal LM: batched, left-padded, optionally steered.

Prompt ids come from ``hf_chat.encode_chat`` (the ids a rollout records); two recorders keep the
raw and the processed log-prob of each chosen token, never a full score tensor per step.

Design: docs/design/inference.md#transformers_backend.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LogitsProcessorList,
)

from crsp_ops.inference.backend import GenerationBackend, Message
from crsp_ops.inference.chosen_logprobs import ChosenTokenLogprobs
from crsp_ops.inference.completions import Completion, SamplingParams
from crsp_ops.inference.hf_chat import check_template_kwargs, encode_chat
from crsp_ops.inference.hf_token_pieces import detect_piece_style, piece_to_bytes
from crsp_ops.inference.sampling_processors import (
    config_overrides,
    penalty_processors,
    sampling_warpers,
)
from crsp_ops.inference.shared_prefill import shared_prefill
from crsp_ops.steering.hf import ClusterBiasLogitsProcessor
from crsp_ops.steering.token_rules import eos_token_ids

logger = logging.getLogger(__name__)

def resolve_device(device: str) -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cuda[:N]`` without CUDA raises.

    Raises:
        RuntimeError: CUDA was asked for and is not available (never a silent CPU fallback).
        ValueError: an unknown device string.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device={device!r} but CUDA is not available (torch {torch.__version__}, "
                f"CUDA build {torch.version.cuda}); use device='cpu' or 'auto'"
            )
        return torch.device(device)
    if device == "cpu":
        return torch.device("cpu")
    raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}")


class TransformersBackend(GenerationBackend):
    """Generate with an in-process HF model; steering through ``ClusterBiasLogitsProcessor``.

    Args:
        model: a causal LM (moved to ``device`` and put in eval mode).
        tokenizer: its tokenizer, with the chat template the served model uses.
        device: ``auto``, ``cpu`` or ``cuda[:N]``.
        token_clusters: (V,) cluster id of every vocabulary token; needed for ``deltas``.
        n_clusters: number of cluster ids (``clusters_meta.json``); default ``max id + 1``.
        stop_token_ids: ids that end a response; default the model's EOS/end-of-turn ids
            (``steering.token_rules.eos_token_ids``: exactly steering cluster 0).
        logprob_semantics: which logprobs fill ``Completion.logprobs``: ``processed`` (what was
            sampled from: after the penalty, steering, temperature, top-k, top-p and min-p) or
            ``raw`` (the policy itself).
        batch_size: conversations per ``generate`` call (memory bound).
        chat_template_kwargs: extra variables of every chat-template render (``{}``: none).

    Raises:
        ValueError: ``chat_template_kwargs`` the tokenizer's template cannot take
            (``hf_chat.check_template_kwargs``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        device: str = "auto",
        token_clusters: Sequence[int] | np.ndarray | torch.Tensor | None = None,
        n_clusters: int | None = None,
        stop_token_ids: Sequence[int] | None = None,
        logprob_semantics: Literal["raw", "processed"] = "processed",
        batch_size: int = 8,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if logprob_semantics not in ("raw", "processed"):
            raise ValueError(f"logprob_semantics must be 'raw' or 'processed', "
                             f"got {logprob_semantics!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.logprob_semantics = logprob_semantics
        self.batch_size = batch_size
        self.token_clusters = None if token_clusters is None else np.asarray(token_clusters)
        self.n_clusters = n_clusters
        if self.token_clusters is not None and n_clusters is None:
            self.n_clusters = int(self.token_clusters.max()) + 1
        if stop_token_ids is None:
            stop_token_ids = eos_token_ids(tokenizer, model.generation_config.eos_token_id)
        self.stop_ids = tuple(sorted(int(i) for i in stop_token_ids))
        if not self.stop_ids:
            raise ValueError("no stop token ids: the tokenizer and generation config define no EOS")
        pad_id = tokenizer.pad_token_id
        self.pad_id = int(pad_id) if pad_id is not None else self.stop_ids[0]
        self._clip_warned = False  # the context clip is logged once per backend
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        check_template_kwargs(tokenizer, self.chat_template_kwargs)

    def with_chat_template_kwargs(self, kwargs: Mapping[str, Any]) -> TransformersBackend:
        """This backend (same model, tokenizer and table) rendering with ``kwargs`` added.

        A per-request view for a server: ``kwargs`` override the backend's own, nothing is
        checked or copied but the kwargs.
        """
        view = copy.copy(self)
        view.chat_template_kwargs = {**self.chat_template_kwargs, **kwargs}
        return view

    @classmethod
    def from_pretrained(
        cls,
        model_dir: str | os.PathLike,
        *,
        device: str = "auto",
        dtype: str = "auto",
        tokenizer_dir: str | os.PathLike | None = None,
        **kwargs: Any,
    ) -> TransformersBackend:
        """Load a local HF model directory (model + tokenizer + chat template); never the hub.

        Args:
            model_dir: a saved model directory.
            tokenizer_dir: where the tokenizer lives when not in ``model_dir``.
            device: ``auto``, ``cpu`` or ``cuda[:N]``.
            dtype: torch dtype name, or ``auto`` for the checkpoint's own.
            **kwargs: forwarded to the constructor (``token_clusters``, ``logprob_semantics``...).
        """
        path = Path(model_dir)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path} is not a saved HF model directory (no config.json)")
        resolve_device(device)  # fail before loading weights
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir or path, local_files_only=True)
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, local_files_only=True)
        return cls(model, tokenizer, device=device, **kwargs)

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        deltas: Sequence[float] | None = None,
    ) -> list[Completion]:
        """Return one completion per conversation, in order (see ``GenerationBackend``)."""
        processors = self._steering_processors(deltas)
        prompts = [encode_chat(self.tokenizer, conversation, self.chat_template_kwargs)[0]
                   for conversation in conversations]
        completions: list[Completion] = []
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, enabled=params.seed is not None):
            if params.seed is not None:  # seeded without disturbing the caller's RNG state
                torch.manual_seed(params.seed)
            for start in range(0, len(prompts), self.batch_size):
                chunk = prompts[start : start + self.batch_size]
                completions.extend(self._generate_batch(chunk, params, processors))
        return completions

    def close(self) -> None:
        """Drop the model so its memory can be freed. Safe to call twice."""
        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _steering_processors(self, deltas: Sequence[float] | None) -> list[Any]:
        if deltas is None:
            return []
        if self.token_clusters is None:
            raise ValueError("deltas given but this backend was built without token_clusters")
        if len(deltas) != self.n_clusters:
            raise ValueError(f"{len(deltas)} deltas for a table of {self.n_clusters} clusters")
        # in place: the raw recorder before it keeps its own copy, and generate() stores no
        # scores (output_scores/output_logits off), so nothing else sees the unsteered tensor
        return [ClusterBiasLogitsProcessor(self.token_clusters, deltas, n_clusters=self.n_clusters,
                                           in_place=True)]

    def _generate_batch(
        self, prompts: list[list[int]], params: SamplingParams, steering: list[Any]
    ) -> list[Completion]:
        if self.model is None:
            raise RuntimeError("generate() after close()")
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)  # (B, P)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)  # (B, P)
        for row, prompt in enumerate(prompts):  # left padding: every prompt ends at column P-1
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt)
            attention_mask[row, width - len(prompt) :] = 1
        raw = ChosenTokenLogprobs(copy=bool(steering))  # steering adds in place after it
        processed = ChosenTokenLogprobs(copy=False)  # the last processor: nothing changes it
        # The knobs are passed as processors (the config's own stay neutral) so the processed
        # recorder can follow them; top_k=0 switches off HF's default top-k of 50, which vLLM
        # and SGLang do not apply.
        padding = torch.tensor([width - len(prompt) for prompt in prompts])  # (B,)
        penalty = penalty_processors(params, padding.to(self.device))
        warpers = sampling_warpers(params)
        config = GenerationConfig(
            max_new_tokens=self._token_budget(width, params.max_new_tokens),
            eos_token_id=list(self.stop_ids),
            pad_token_id=self.pad_id,
            return_dict_in_generate=True,
            do_sample=not params.greedy,
            temperature=1.0,
            top_p=1.0,
            **({} if params.greedy else {"top_k": 0}),  # greedy: HF warns about an unused top_k
            **config_overrides(params),
        )
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                logits_processor=LogitsProcessorList(
                    [raw, *penalty, *steering, *warpers, processed]),
                **shared_prefill(self.model, input_ids, attention_mask, prompts),
            )
        new_tokens = output.sequences[:, width:]  # (B, S)
        processed_logprobs = processed.logprobs(new_tokens)  # (B, S)
        raw_logprobs = raw.logprobs(new_tokens)  # (B, S)
        return [
            self._completion(prompt, new_tokens[row].tolist(), raw_logprobs[row],
                             processed_logprobs[row], params)
            for row, prompt in enumerate(prompts)
        ]

    def _token_budget(self, prompt_width: int, max_new_tokens: int) -> int:
        """``max_new_tokens``, clipped so prompt + response fit the model's context.

        A model asked past ``max_position_embeddings`` generates from positions it never saw
        (transformers only warns); the budget shrinks instead, and the response ends with
        ``finish_reason="length"``.

        Raises:
            ValueError: the prompt alone leaves no room for one token.
        """
        context = getattr(self.model.config, "max_position_embeddings", None)
        if context is None or prompt_width + max_new_tokens <= context:
            return max_new_tokens
        budget = context - prompt_width
        if budget < 1:
            raise ValueError(f"a prompt of {prompt_width} tokens leaves no room in the model's "
                             f"context of {context} tokens: shorten the prompt")
        if not self._clip_warned:
            self._clip_warned = True
            logger.warning("prompt of %d tokens + max_new_tokens %d exceed the model's context "
                           "(%d): generating at most %d tokens (lower the max_new_tokens "
                           "setting to silence this)", prompt_width, max_new_tokens, context,
                           budget)
        return budget

    def _completion(
        self,
        prompt: list[int],
        generated: list[int],
        raw: np.ndarray,
        processed: np.ndarray,
        params: SamplingParams,
    ) -> Completion:
        stop = next((i for i, token in enumerate(generated) if token in self.stop_ids), None)
        length = len(generated) if stop is None else stop + 1  # keep the EOS, drop padding
        token_ids = tuple(generated[:length])
        raw_logprobs = tuple(float(x) for x in raw[:length])
        processed_logprobs = tuple(float(x) for x in processed[:length])
        return Completion(
            text=self.tokenizer.decode(list(token_ids), skip_special_tokens=True),
            prompt_token_ids=tuple(prompt),
            token_ids=token_ids,
            logprobs=processed_logprobs if self.logprob_semantics == "processed" else raw_logprobs,
            finish_reason="stop" if stop is not None else "length",
            logprob_semantics=self.logprob_semantics,
            extra={"raw_logprobs": raw_logprobs, "processed_logprobs": processed_logprobs},
        )


def completion_to_choice(completion: Completion, tokenizer: Any, index: int = 0) -> dict:
    """Render a completion as an OpenAI-shaped chat choice dict.

    Fields: ``index``, ``message`` (``role``, ``content``), ``finish_reason``, ``logprobs``
    (``content[]`` of ``token`` from ``convert_ids_to_tokens``, ``logprob``, ``bytes``,
    ``top_logprobs=[]``; ``None`` when the completion has no logprobs), vLLM-style
    ``token_ids`` and ``prompt_token_ids``, and ``logprob_semantics`` (ours, read by
    ``InferenceContext.create_rollout_from_choice``).
    """
    logprobs = None
    if completion.logprob_semantics != "none":
        style = detect_piece_style(tokenizer)
        pieces = tokenizer.convert_ids_to_tokens(list(completion.token_ids))
        content = []
        for token_id, piece, logprob in zip(
            completion.token_ids, pieces, completion.logprobs, strict=True
        ):
            spelled = piece_to_bytes(piece, style)
            if spelled is None:
                spelled = tokenizer.decode([token_id]).encode("utf-8")
            content.append(
                {"token": piece, "logprob": logprob, "bytes": list(spelled), "top_logprobs": []}
            )
        logprobs = {"content": content}
    return {
        "index": index,
        "message": {"role": "assistant", "content": completion.text},
        "finish_reason": completion.finish_reason,
        "logprobs": logprobs,
        "token_ids": list(completion.token_ids),
        "prompt_token_ids": list(completion.prompt_token_ids),
        "logprob_semantics": completion.logprob_semantics,
    }
