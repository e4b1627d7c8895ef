"""Top-k alternatives per response position for the local server's ``top_logprobs``.

``TransformersBackend`` returns only the chosen token's logprob, so the alternatives are
recomputed by one teacher-forced forward pass over prompt + response, pushed through the same
steps ``generate`` applies to its scores (``sampling_processors``): the repetition penalty
(each position over the ids before it), the steering bias, then (when sampling) temperature,
top-k, top-p and min-p. With ``raw`` semantics the bare logits are used, as vLLM's
``raw_logprobs`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from crsp_ops.inference.completions import Completion, LogprobSemantics, SamplingParams
from crsp_ops.inference.hf_token_pieces import detect_piece_style, piece_to_bytes
from crsp_ops.inference.sampling_processors import penalty_processors, sampling_warpers
from crsp_ops.steering.hf import ClusterBiasLogitsProcessor


def step_logprobs(
    model: Any,
    completion: Completion,
    params: SamplingParams,
    semantics: LogprobSemantics,
    token_clusters: Any | None,
    deltas: Sequence[float] | None,
) -> torch.Tensor:
    """``(R, V)`` log-probabilities of every response position, as ``semantics`` defines them."""
    prompt, response = list(completion.prompt_token_ids), list(completion.token_ids)
    device = next(model.parameters()).device
    ids = torch.tensor([prompt + response], dtype=torch.long, device=device)  # (1, P+R)
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0].float()  # (P+R, V)
    scores = logits[len(prompt) - 1 : len(prompt) - 1 + len(response)]  # (R, V)
    if semantics == "processed":
        for penalty in penalty_processors(params):  # position r sees the ids before it
            scores = torch.cat([penalty(ids[:, : len(prompt) + r], scores[r : r + 1])
                                for r in range(len(response))])
        if deltas is not None:
            scores = ClusterBiasLogitsProcessor(token_clusters, deltas)(None, scores)
        for warper in sampling_warpers(params):
            scores = warper(None, scores)
    return torch.log_softmax(scores, dim=-1)


def top_alternatives(
    logprobs: torch.Tensor, k: int, tokenizer: Any
) -> tuple[list[list[dict[str, Any]]], list[list[int]]]:
    """OpenAI ``top_logprobs`` entries (``token``, ``logprob``, ``bytes``) per position.

    Returns:
        ``(entries, ids)``: per position, the k entries best first and their token ids.
    """
    values, indices = torch.topk(logprobs, k=min(k, logprobs.shape[-1]), dim=-1)  # (R, k)
    style = detect_piece_style(tokenizer)
    rows = []
    for row_values, row_ids in zip(values.tolist(), indices.tolist(), strict=True):
        pieces = tokenizer.convert_ids_to_tokens(row_ids)
        row = []
        for token_id, piece, value in zip(row_ids, pieces, row_values, strict=True):
            if piece is None:  # model vocabulary padded beyond the tokenizer's
                piece, spelled = f"token_id:{token_id}", b""
            else:
                spelled = piece_to_bytes(piece, style)
                if spelled is None:
                    spelled = tokenizer.decode([token_id]).encode("utf-8")
            row.append({"token": piece, "logprob": value, "bytes": list(spelled)})
        rows.append(row)
    return rows, indices.tolist()
