"""Parse critique and grader outputs: ``<think>`` blocks, verdicts and effort grades.

The parsers never raise on model output. ``parse_grade`` tries, in order, a fenced JSON block,
a bare JSON object and a ``grade: 0.7`` fallback (also ``grade: 7/10``); text outside
``<think>`` is searched first so a grade mentioned while thinking does not win. When nothing
parses, the grade is ``NEUTRAL_GRADE`` and ``source == "none"``, which callers count as a
format failure (``count_format_failures``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from crsp_ops.crsp.rewards.formulas import CreativityEvaluation
from crsp_ops.crsp.tasks.think import extract_think, strip_think

NEUTRAL_GRADE = 0.5
GRADE_DIMENSIONS = ("diversity", "depth", "creativity", "rigor")

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_GRADE_FALLBACK = re.compile(
    r"""["']?\bgrade\b["']?\s*[:=]\s*["']?(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)"""
    r"""(?:\s*/\s*(\d+(?:\.\d+)?))?""",
    re.IGNORECASE,
)
_VERDICT = re.compile(r"\bverdict\b\s*[:=]?\s*\**\s*[\"']?(correct|incorrect|wrong|right)\b",
                      re.IGNORECASE)
_VERDICT_TAG = re.compile(r"<verdict>\s*(correct|incorrect|wrong|right)\s*</verdict>",
                          re.IGNORECASE)
_POSITIVE = {"correct", "right", "true", "yes"}
_NEGATIVE = {"incorrect", "wrong", "false", "no"}


def parse_grade(text: str) -> CreativityEvaluation:
    r"""Parse a grader (or critique) reply into a ``CreativityEvaluation``; never raises.

    Args:
        text: the raw model reply.

    Returns:
        The grade clamped to [0, 1]; ``source`` tells which form was found, ``"none"`` means
        unparseable (neutral grade, counted as a format failure).

    >>> parse_grade('```json\n{"rationale": "tried 3 ways", "grade": 0.8}\n```').grade
    0.8
    >>> parse_grade('{"rationale": "ok", "grade": 1.7}').grade
    1.0
    >>> parse_grade("Overall grade: 0.7").source
    'fallback'
    >>> parse_grade("no idea").grade
    0.5
    """
    for region in (strip_think(text), text):
        evaluation = _parse_region(region)
        if evaluation is not None:
            return evaluation
    return CreativityEvaluation(grade=NEUTRAL_GRADE, rationale="", source="none")


def _parse_region(text: str) -> CreativityEvaluation | None:
    for block in _FENCE.findall(text):
        evaluation = _from_json_object(_first_json_object(block), "fenced")
        if evaluation is not None:
            return evaluation
    evaluation = _from_json_object(_first_json_object(text, needs_key="grade"), "bare")
    if evaluation is not None:
        return evaluation
    for match in _GRADE_FALLBACK.finditer(text):
        value = _to_finite(match.group(1))
        if value is None:
            continue
        if match.group(2) is not None:
            denominator = _to_finite(match.group(2))
            if not denominator:
                continue
            value /= denominator
        return CreativityEvaluation(grade=_clamp(value), rationale="", source="fallback")
    return None


def _first_json_object(text: str, needs_key: str | None = None) -> dict | None:
    """Decode the first JSON object in ``text`` (with ``needs_key`` if given)."""
    decoder = json.JSONDecoder()
    for start in (i for i, char in enumerate(text) if char == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict) and (needs_key is None or needs_key in value):
            return value
    return None


def _from_json_object(obj: dict | None, source: str) -> CreativityEvaluation | None:
    if obj is None:
        return None
    grade = _to_finite(obj.get("grade"))
    if grade is None:
        return None
    rationale = obj.get("rationale", "")
    dimensions = {}
    for name in GRADE_DIMENSIONS:
        value = _to_finite(obj.get(name))
        if value is not None:
            dimensions[name] = _clamp(value)
    return CreativityEvaluation(grade=_clamp(grade),
                                rationale=rationale if isinstance(rationale, str) else "",
                                source=source, dimensions=dimensions)


def _to_finite(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def parse_verdict(text: str) -> bool | None:
    """Read the critique's verdict on correctness; ``None`` when absent or ambiguous.

    Accepts ``Verdict: correct|incorrect`` (last one after ``</think>`` wins),
    ``<verdict>correct</verdict>``, or a ``"verdict"`` key in a JSON object.

    >>> parse_verdict("<think>verdict: correct?</think>Verdict: incorrect")
    False
    >>> parse_verdict('{"verdict": "correct", "grade": 0.4}')
    True
    >>> parse_verdict("looks fine") is None
    True
    """
    visible = strip_think(text)
    matches = _VERDICT_TAG.findall(visible) or _VERDICT.findall(visible)
    if matches:
        return matches[-1].lower() in _POSITIVE
    obj = _first_json_object(visible, needs_key="verdict")
    if obj is not None:
        value = obj["verdict"]
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _POSITIVE | _NEGATIVE:
            return value.strip().lower() in _POSITIVE
    return None


def agreement(verdict: bool | None, truth: bool) -> float:
    """1.0 when the critique's verdict matches the executor's truth, else 0.0 (also if missing).

    >>> agreement(True, True), agreement(True, False), agreement(None, False)
    (1.0, 0.0, 0.0)
    """
    return 1.0 if verdict is not None and verdict == truth else 0.0


@dataclass(frozen=True)
class CritiqueOutput:
    """One parsed critique-role response."""

    thinking: str | None  # content of <think>, None if missing
    verdict: bool | None  # True = "correct", None if missing
    evaluation: CreativityEvaluation  # its JSON grade of the solution's effort

    @property
    def well_formed(self) -> bool:
        """Has a ``<think>`` block, a verdict and a parseable grade (the format rule's test)."""
        return self.thinking is not None and self.verdict is not None and self.evaluation.format_ok


def parse_critique(text: str) -> CritiqueOutput:
    """Parse a critique-role response; never raises.

    >>> text = '<think>2+2=4</think>Verdict: correct {"rationale": "x", "grade": 0.3}'
    >>> out = parse_critique(text)
    >>> out.verdict, out.evaluation.grade, out.well_formed
    (True, 0.3, True)
    """
    return CritiqueOutput(thinking=extract_think(text), verdict=parse_verdict(text),
                          evaluation=parse_grade(text))


def count_format_failures(evaluations: Iterable[CreativityEvaluation]) -> int:
    """Number of evaluations whose grade could not be parsed (neutral grade used)."""
    return sum(1 for evaluation in evaluations if not evaluation.format_ok)
