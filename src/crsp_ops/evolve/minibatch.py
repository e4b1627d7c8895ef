"""Run one minibatch: FinanceBench examples → prompts → completions → graded records → scores.

One backend call per minibatch with the same deltas for every example; grading and scoring are
pure, so scores depend only on examples, deltas, sampling parameters and backend.

Design: docs/design/evolve.md#minibatch.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from crsp_ops.data.examples import FinanceBenchExample
from crsp_ops.data.financebench import render_question_prompt
from crsp_ops.evaluation.minibatch_grading import Grading, ScoreWeights
from crsp_ops.evaluation.scoring import (
    composite_score,
    correctness_ratio,
    mean_token_length,
    shortness_score,
)
from crsp_ops.inference.backend import GenerationBackend
from crsp_ops.inference.completions import Completion, SamplingParams
from crsp_ops.steering.deltas import deltas_to_list


@dataclass(frozen=True)
class ExampleRecord:
    """One graded answer of a minibatch."""

    example_id: str  # FinanceBench ``financebench_id``
    question: str
    ground_truth: str  # the gold answer
    answer: str  # the model's full response text
    response_tokens: int  # response length in tokens (a final EOS counts)
    is_correct: bool
    reasoning: str  # the grader's explanation
    token_ids: tuple[int, ...] = ()  # response token ids (per-cluster usage for proposers)
    finish_reason: str = "stop"  # "stop" | "length" (hit max_new_tokens)


@dataclass(frozen=True)
class MinibatchScores:
    """The four numbers each evolution iteration is judged by."""

    mean_token_length: float
    correctness_ratio: float
    shortness_score: float  # 1 / (1 + mean_token_length / scale)
    composite_score: float  # w_short * shortness + w_correct * correctness

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        """The scores as a metrics dict, keys optionally prefixed (e.g. ``heldout_``)."""
        return {f"{prefix}{key}": float(value) for key, value in asdict(self).items()}


@dataclass(frozen=True)
class MinibatchResult:
    """Records (in example order), scores, and where the time went."""

    records: tuple[ExampleRecord, ...]
    scores: MinibatchScores
    deltas: tuple[float, ...] | None  # what steered this minibatch (index = cluster id)
    generation_s: float  # wall time inside backend.generate
    grading_s: float  # wall time grading

    def to_json(self) -> dict:
        """A JSON-ready dict (records as objects) for history files and artifacts."""
        return {
            "scores": asdict(self.scores),
            "deltas": None if self.deltas is None else list(self.deltas),
            "generation_s": self.generation_s,
            "grading_s": self.grading_s,
            "records": [{**asdict(r), "token_ids": list(r.token_ids)} for r in self.records],
        }


def score_records(records: Sequence[ExampleRecord], weights: ScoreWeights) -> MinibatchScores:
    """Score graded records with ``evaluation.scoring`` (pure).

    >>> weights = ScoreWeights(shortness_scale=10.0, shortness_weight=0.4, correctness_weight=0.6)
    >>> records = [ExampleRecord("a", "q", "1", "1", 10, True, ""),
    ...            ExampleRecord("b", "q", "2", "3", 30, False, "")]
    >>> scores = score_records(records, weights)
    >>> scores.mean_token_length, scores.correctness_ratio, round(scores.composite_score, 4)
    (20.0, 0.5, 0.4333)
    """
    mean = mean_token_length([record.response_tokens for record in records])
    correct = correctness_ratio([record.is_correct for record in records])
    short = shortness_score(mean, scale=weights.shortness_scale)
    composite = composite_score(
        short, correct, w_short=weights.shortness_weight, w_correct=weights.correctness_weight
    )
    return MinibatchScores(mean, correct, short, composite)


def run_minibatch(
    examples: Sequence[FinanceBenchExample],
    backend: GenerationBackend,
    deltas: Mapping[str, float] | Sequence[float] | None,
    *,
    template: str,
    sampling: SamplingParams,
    grade: Grading,
) -> MinibatchResult:
    """Generate, grade and score one minibatch.

    Args:
        examples: the minibatch (at least one example).
        backend: any generation backend (steered backends take ``deltas``).
        deltas: per-cluster deltas (``{"0": ..}`` or a list, index = cluster id), or ``None``
            for unsteered decoding.
        template: the user-message template with ``{evidence}`` and ``{question}``
            (``steering.runtime.prompt_template(settings)``: newlines already decoded).
        sampling: decoding parameters shared by the minibatch.
        grade: grader and score constants (``grading_from_settings(settings.scoring)``).

    Returns:
        One record per example, in order, and the minibatch scores.

    Raises:
        ValueError: no examples, deltas the backend rejects, or a backend returning the wrong
            number of completions.
    """
    if not examples:
        raise ValueError("run_minibatch needs at least one example")
    values = _deltas_values(deltas)
    conversations = [
        [{"role": "user", "content": render_question_prompt(example, template=template)}]
        for example in examples
    ]
    started = time.perf_counter()
    completions = backend.generate(conversations, sampling, deltas=values)
    generated = time.perf_counter()
    if len(completions) != len(examples):
        raise ValueError(f"backend returned {len(completions)} completions for "
                         f"{len(examples)} examples")
    records = _grade_completions(examples, completions, grade)
    graded = time.perf_counter()
    return MinibatchResult(
        records=tuple(records),
        scores=score_records(records, grade.weights),
        deltas=None if values is None else tuple(values),
        generation_s=generated - started,
        grading_s=graded - generated,
    )


def _grade_completions(
    examples: Sequence[FinanceBenchExample], completions: Sequence[Completion], grade: Grading,
) -> list[ExampleRecord]:
    """Grade each completion against its example's answer, in example order."""
    records = []
    for example, completion in zip(examples, completions, strict=True):
        verdict = grade.grade(completion.text, example.answer, example.question)
        records.append(
            ExampleRecord(
                example_id=example.financebench_id,
                question=example.question,
                ground_truth=example.answer,
                answer=completion.text,
                response_tokens=completion.response_tokens,
                is_correct=bool(verdict.is_correct),
                reasoning=verdict.reasoning,
                token_ids=tuple(completion.token_ids),
                finish_reason=completion.finish_reason,
            )
        )
    return records


def _deltas_values(deltas: Mapping[str, float] | Sequence[float] | None) -> list[float] | None:
    if deltas is None:
        return None
    if isinstance(deltas, Mapping):
        return deltas_to_list(deltas)  # validates the exact key set 0..K-1
    return [float(value) for value in deltas]
