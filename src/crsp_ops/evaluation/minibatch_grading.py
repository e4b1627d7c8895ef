"""How a minibatch is graded and scored, built from the ``scoring`` settings by one factory.

A ``Grading`` bundles the per-answer grader (numeric by default, an LLM judge optionally) with
the composite-score constants, so ``run_minibatch`` takes one object and every caller scores
the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crsp_ops.evaluation.correctness import Grade, LLMJudge, grade
from crsp_ops.openai_client import make_openai_client, resolve_endpoint

Grader = Callable[[str, str, str], Grade]
"""``(answer, gold, question) -> Grade``."""


@dataclass(frozen=True)
class ScoreWeights:
    """Constants of ``composite = w_short * shortness + w_correct * correctness``."""

    shortness_scale: float  # tokens at which shortness is 0.5
    shortness_weight: float
    correctness_weight: float


@dataclass(frozen=True)
class Grading:
    """A grader plus the score constants: everything ``run_minibatch`` needs to judge answers."""

    grader: Grader
    weights: ScoreWeights
    method: str  # "numeric" | "llm_judge", for logs

    def grade(self, answer: str, gold: str, question: str) -> Grade:
        """Grade one answer."""
        return self.grader(answer, gold, question)


def numeric_grader(rel_tol: float) -> Grader:
    """The default grader: ``correctness.grade`` with the question passed through.

    It takes the committed figure (``<answer>`` tag, "final answer", "is approximately", the
    last sentence's figure; never a year, a reference or a quoted input), reads the question's
    units and requested precision, and matches within ``rel_tol`` or by rounding; refusals and
    several uncommitted values are wrong. Text gold: refusal, yes/no, key phrase and numbers.

    >>> numeric_grader(0.01)("The answer is $1,200 million.", "1.2 billion", "q").is_correct
    True
    >>> numeric_grader(0.01)("About $1.6 billion.", "1577", "Capex (in USD millions)?").is_correct
    True
    """

    def grade_numeric(answer: str, gold: str, question: str) -> Grade:
        return grade(answer, gold, question=question, rel_tol=rel_tol)

    return grade_numeric


def judge_grader(judge: LLMJudge) -> Grader:
    """A grader asking an LLM judge (invalid judge replies raise ``ValueError``)."""

    def grade_with_judge(answer: str, gold: str, question: str) -> Grade:
        return judge.grade(answer, gold, question=question)

    return grade_with_judge


def grading_from_settings(scoring: Any, *, judge_client: Any | None = None) -> Grading:
    """Build the ``Grading`` of a ``ScoringSettings``.

    Args:
        scoring: ``settings.scoring``.
        judge_client: an ``openai.OpenAI`` client for the judge (tests, custom transport);
            default: one built from ``judge_base_url``, ``judge_api_key_env`` and
            ``judge_timeout_s``, falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``
            (``crsp_ops.openai_client``).

    Raises:
        ValueError: an unknown method, or a judge on the OpenAI API without a key.
    """
    weights = ScoreWeights(
        shortness_scale=scoring.shortness_scale,
        shortness_weight=scoring.shortness_weight,
        correctness_weight=scoring.correctness_weight,
    )
    if scoring.correctness == "numeric":
        return Grading(numeric_grader(scoring.rel_tol), weights, "numeric")
    if scoring.correctness == "llm_judge":
        client = judge_client or _judge_client(scoring)
        judge = LLMJudge(client, model=scoring.judge_model, rel_tol=scoring.rel_tol)
        return Grading(judge_grader(judge), weights, "llm_judge")
    raise ValueError(
        f"scoring.correctness must be numeric or llm_judge, got {scoring.correctness!r}"
    )


def _judge_client(scoring: Any) -> Any:
    endpoint = resolve_endpoint(
        base_url=scoring.judge_base_url, api_key_env=scoring.judge_api_key_env,
        role="LLM judge", url_option="scoring.judge_base_url",
        key_option="scoring.judge_api_key_env",
    )
    return make_openai_client(endpoint, timeout_s=scoring.judge_timeout_s, max_retries=2)
