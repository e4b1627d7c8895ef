"""InferenceContext: the one place that turns chat prompts and OpenAI-shaped choices into rollouts.

A rollout is trainable only if its prompt ids are those the engine fed the model and its
response ids and logprobs line up; re-encoding a prompt by hand would silently misalign them.

Design: docs/design/inference.md#context.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crsp_ops.inference.completions import Completion, LogprobSemantics
from crsp_ops.inference.hf_chat import Prompt, encode_chat
from crsp_ops.inference.hf_token_pieces import (
    PieceStyle,
    bytes_to_pieces,
    detect_piece_style,
    piece_to_bytes,
)
from crsp_ops.inference.response_fields import (
    engine_prompt_ids,
    engine_response_ids,
    field_value,
)
from crsp_ops.inference.rollouts import Rollout

logger = logging.getLogger(__name__)

_TOKEN_ID_FORM = re.compile(r"^token_id:(\d+)$")  # vLLM --return-tokens-as-token-ids
_HOW_TO_GET_IDS = (
    "ask the engine for token ids (vLLM: extra_body return_token_ids=True or "
    "return_tokens_as_token_ids=True; SGLang: return_token_ids=True; see "
    "crsp_ops.inference.request_options)"
)


class PromptAlignmentError(ValueError):
    """The server tokenized the prompt differently from the client-side chat template."""


def choice_field(obj: Any, name: str) -> Any:
    """Read ``name`` from a dict, an SDK object, or an SDK object's ``model_extra``; else None."""
    return field_value(obj, name)


class InferenceContext:
    """Owns the tokenizer and the engine conventions rollouts are built with.

    Args:
        tokenizer: the policy's HF tokenizer (the same one the engine serves).
        logprob_semantics: what logprobs in choices mean when a choice does not say (see
            ``request_options``: vLLM default ``raw``, SGLang ``processed``).
        min_response_tokens: responses shorter than this are kept and counted (the first
            one logged).
        chat_template_kwargs: extra chat-template variables; the engine must render with the
            same ones (the backend's ``chat_template_kwargs``), or prompt alignment fails.
    """

    def __init__(
        self,
        tokenizer: Any,
        logprob_semantics: LogprobSemantics = "raw",
        min_response_tokens: int = 5,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.logprob_semantics = logprob_semantics
        self.min_response_tokens = min_response_tokens
        self._piece_style: PieceStyle = detect_piece_style(tokenizer)
        self._counts: Counter[str] = Counter()

    # ---- prompts -------------------------------------------------------------------------

    def tokenize_prompt(self, prompt: Prompt) -> np.ndarray:
        """Prompt ids exactly as an engine serving this tokenizer feeds them to the model.

        Args:
            prompt: a user prompt string or a chat message list (multi-turn allowed).

        Returns:
            (P,) int32 ids: chat template with the generation prompt; without a template, the
            ``role: content`` fallback documented in ``hf_chat`` (logged as a warning).

        Raises:
            ValueError: the prompt is empty, naming it.
        """
        ids, used_fallback = encode_chat(self.tokenizer, prompt, self.chat_template_kwargs)
        if used_fallback:
            self._counts["template_fallbacks"] += 1
            logger.warning(
                "tokenizer has no chat template: prompt encoded as 'role: content' lines plus "
                "'assistant:'; the server must use the same format or rollouts will misalign"
            )
        return np.asarray(ids, dtype=np.int32)

    def check_prompt_alignment(
        self, prompt_tokens: Sequence[int], server_prompt_token_ids: Sequence[int]
    ) -> None:
        """Raise unless the server's prompt ids equal the client-side ones.

        Raises:
            PromptAlignmentError: naming the first differing position and both token strings.
        """
        ours = [int(i) for i in prompt_tokens]
        theirs = [int(i) for i in server_prompt_token_ids]
        self._counts["prompt_alignment_checks"] += 1
        if ours == theirs:
            return
        self._counts["prompt_alignment_mismatches"] += 1
        shared = min(len(ours), len(theirs))
        position = next((i for i in range(shared) if ours[i] != theirs[i]), shared)
        raise PromptAlignmentError(
            f"prompt tokens differ from the server's at position {position}: ours "
            f"{self._token_at(ours, position)}, server {self._token_at(theirs, position)} "
            f"(lengths {len(ours)} vs {len(theirs)}); the server applies a different chat "
            "template or tokenizer than this InferenceContext"
        )

    def _token_at(self, ids: list[int], position: int) -> str:
        if position >= len(ids):
            return "<end of prompt>"
        return f"{self.tokenizer.convert_ids_to_tokens(ids[position])!r} (id {ids[position]})"

    # ---- responses -----------------------------------------------------------------------

    def response_tokens_from_choice(self, choice: Any) -> np.ndarray:
        """Response ids of an OpenAI-shaped chat choice (engine ids first, else logprob tokens).

        Returns:
            (R,) int32 ids.

        Raises:
            ValueError: no token ids and no logprobs, an unknown token, or zero tokens; the
                message says which request field fixes it.
        """
        engine_ids = engine_response_ids(choice)
        if engine_ids is not None:
            if len(engine_ids) == 0:
                raise ValueError("choice has zero response tokens (its token ids are empty)")
            self._counts["engine_token_ids"] += 1
            return np.asarray([int(i) for i in engine_ids], dtype=np.int32)
        content = self._logprob_content(choice)
        self._counts["token_string_round_trips"] += 1
        return np.asarray(
            [self._token_id(item, position) for position, item in enumerate(content)],
            dtype=np.int32,
        )

    def logprobs_from_choice(self, choice: Any) -> np.ndarray:
        """(R,) float32 logprob of each response token, checked against the token count."""
        content = self._logprob_content(choice)
        logprobs = np.asarray(
            [float(choice_field(item, "logprob")) for item in content], dtype=np.float32
        )
        engine_ids = engine_response_ids(choice)
        if engine_ids is not None and len(engine_ids) != len(logprobs):
            raise ValueError(
                f"choice has {len(engine_ids)} token ids but {len(logprobs)} logprobs; "
                "streamed or truncated responses cannot be trained on"
            )
        return logprobs

    def _logprob_content(self, choice: Any) -> list[Any]:
        logprobs = choice_field(choice, "logprobs")
        content = choice_field(logprobs, "content")
        if content is None:
            raise ValueError(
                "choice has no logprobs: request them with logprobs=True (see "
                "crsp_ops.inference.request_options.rollout_request_options)"
            )
        if len(content) == 0:
            raise ValueError("choice has zero response tokens (logprobs.content is empty)")
        return list(content)

    def _token_id(self, item: Any, position: int) -> int:
        token = choice_field(item, "token")
        if not isinstance(token, str):
            raise ValueError(f"logprobs.content[{position}] has no token string")
        match = _TOKEN_ID_FORM.match(token)
        if match:
            token_id = int(match.group(1))
            if token_id >= len(self.tokenizer):
                raise ValueError(
                    f"token {token!r} at position {position} is outside this tokenizer's "
                    f"{len(self.tokenizer)}-token vocabulary: is the server running another model?"
                )
            return token_id
        raw = choice_field(item, "bytes")
        raw = bytes(raw) if raw is not None else None
        token_id = self._vocab_id(token)
        if token_id is not None and raw is not None:
            spelled = piece_to_bytes(token, self._piece_style)
            if spelled is not None and spelled != raw:
                token_id = None  # decoded text that happens to equal another piece
        if token_id is not None:
            return token_id
        if "\ufffd" in token and raw is None:
            raise ValueError(self._unknown(token, position, "it is a lossy partial-UTF-8 decode"))
        for piece in bytes_to_pieces(raw if raw is not None else token.encode("utf-8"),
                                     self._piece_style):
            token_id = self._vocab_id(piece)
            if token_id is not None:
                return token_id
        raise ValueError(self._unknown(token, position, "it is not in the vocabulary"))

    def _vocab_id(self, piece: str) -> int | None:
        token_id = self.tokenizer.convert_tokens_to_ids(piece)
        unk_id = getattr(self.tokenizer, "unk_token_id", None)
        if token_id is None or (token_id == unk_id and piece != self.tokenizer.unk_token):
            return None
        return int(token_id)

    def _unknown(self, token: str, position: int, why: str) -> str:
        return (
            f"cannot map token {token!r} at position {position} to an id: {why}; "
            + _HOW_TO_GET_IDS
        )

    # ---- rollouts ------------------------------------------------------------------------

    def create_rollout_from_choice(
        self,
        prompt: Prompt,
        choice: Any,
        env_name: str,
        env_example_id: str,
        reward: float,
        *,
        server_prompt_token_ids: Sequence[int] | None = None,
        token_rewards: Sequence[float] | None = None,
        logprob_semantics: LogprobSemantics | None = None,
    ) -> Rollout:
        """Build a validated :class:`~crsp_ops.inference.rollouts.Rollout` from one chat choice.

        Args:
            prompt: the prompt string or message list the request was made with.
            choice: an OpenAI-shaped choice (SDK object or dict) with logprobs.
            env_name: environment / task family name.
            env_example_id: example id within the environment.
            reward: episode reward; also every token's reward unless ``token_rewards`` is given.
            server_prompt_token_ids: the prompt ids the server reports (vLLM puts them on the
                response, not the choice); when ``None`` the choice's ``prompt_token_ids`` is
                used if present. Either is checked against :meth:`tokenize_prompt`.
            token_rewards: per-token rewards, one per response token.
            logprob_semantics: overrides the choice's ``logprob_semantics`` field and the
                context default.

        Raises:
            ValueError: empty prompt or response, token/logprob/reward length mismatch.
            PromptAlignmentError: the server's prompt ids differ from ours.
        """
        if server_prompt_token_ids is None:
            server_prompt_token_ids = engine_prompt_ids(choice)
        response_tokens = self.response_tokens_from_choice(choice)
        response_logprobs = self.logprobs_from_choice(choice)
        if len(response_tokens) != len(response_logprobs):
            raise ValueError(
                f"{env_name}/{env_example_id}: {len(response_tokens)} response tokens but "
                f"{len(response_logprobs)} logprobs"
            )
        semantics = (
            logprob_semantics
            or choice_field(choice, "logprob_semantics")
            or self.logprob_semantics
        )
        return self._assemble(prompt, server_prompt_token_ids, response_tokens, response_logprobs,
                              semantics, env_name, env_example_id, reward, token_rewards)

    def create_rollout_from_completion(
        self,
        prompt: Prompt,
        completion: Completion,
        env_name: str,
        env_example_id: str,
        reward: float,
        *,
        token_rewards: Sequence[float] | None = None,
    ) -> Rollout:
        """Build a validated rollout straight from a backend's :class:`Completion`.

        The completion already carries the engine's prompt ids, response ids and logprobs
        (whatever fields the engine sent them in), so nothing is re-parsed: the prompt is
        tokenized with the chat template and checked against the ids the engine used, and the
        response ids and logprobs are taken as they are.

        Raises:
            ValueError: empty prompt or response, no logprobs, or a reward length mismatch.
            PromptAlignmentError: the engine's prompt ids differ from ours.
        """
        where = f"{env_name}/{env_example_id}"
        if completion.logprob_semantics == "none":
            raise ValueError(f"{where}: the completion has no logprobs (request them)")
        if not completion.token_ids:
            raise ValueError(f"{where}: zero response tokens")
        self._counts["engine_token_ids"] += 1
        return self._assemble(
            prompt, completion.prompt_token_ids or None,
            np.asarray(completion.token_ids, dtype=np.int32),
            np.asarray(completion.logprobs, dtype=np.float32), completion.logprob_semantics,
            env_name, env_example_id, reward, token_rewards)

    def _assemble(
        self,
        prompt: Prompt,
        engine_prompt_ids: Sequence[int] | None,
        response_tokens: np.ndarray,
        response_logprobs: np.ndarray,
        semantics: LogprobSemantics,
        env_name: str,
        env_example_id: str,
        reward: float,
        token_rewards: Sequence[float] | None,
    ) -> Rollout:
        """Tokenize the prompt, check it against the engine's ids, and build the rollout."""
        prompt_tokens = self.tokenize_prompt(prompt)
        if engine_prompt_ids is None:
            self._counts["prompt_alignment_unchecked"] += 1
        else:
            self.check_prompt_alignment(prompt_tokens, engine_prompt_ids)
        if len(response_tokens) < self.min_response_tokens:
            self._counts["short_responses"] += 1
            if self._counts["short_responses"] == 1:  # a one-word task has thousands: once
                logger.warning("only %d response tokens for %s/%s (kept; further short "
                               "responses are counted in short_responses, not logged)",
                               len(response_tokens), env_name, env_example_id)
        if token_rewards is None:
            token_rewards = np.full(len(response_tokens), reward, dtype=np.float32)
        rollout = Rollout(
            env_name=env_name,
            env_example_id=env_example_id,
            prompt_tokens=prompt_tokens,
            response_tokens=response_tokens,
            response_logprobs=response_logprobs,
            token_rewards=np.asarray(token_rewards, dtype=np.float32),
            episode_reward=reward,
            logprob_semantics=semantics,
        )
        self._counts["rollouts"] += 1
        return rollout

    # ---- metrics -------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Counters since creation (or :meth:`reset_stats`), ready for ``log_metrics``.

        Keys: ``rollouts``, ``short_responses``, ``template_fallbacks``,
        ``prompt_alignment_checks``, ``prompt_alignment_mismatches``,
        ``prompt_alignment_unchecked``, ``engine_token_ids``, ``token_string_round_trips``.
        """
        keys = (
            "rollouts",
            "short_responses",
            "template_fallbacks",
            "prompt_alignment_checks",
            "prompt_alignment_mismatches",
            "prompt_alignment_unchecked",
            "engine_token_ids",
            "token_string_round_trips",
        )
        return {key: int(self._counts[key]) for key in keys}

    def reset_stats(self) -> None:
        """Zero every counter (e.g. once per logged training step)."""
        self._counts.clear()
