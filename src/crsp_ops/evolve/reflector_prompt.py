"""The reflector's messages: the seed's §4.2 system and user templates with its four inputs.

Inputs: (1) the cluster descriptions, (2) the deltas used for this minibatch, (3) the evolving
summary, (4) every minibatch response with its correctness and the grader's explanation
(optionally only the k longest, each optionally truncated). Example deltas are never sent, so
the reflector cannot copy a template. With ``evolve.frontier`` a fifth section carries the
Pareto frontier's lessons (each leading candidate's summary and per-cluster changes; never
per-example data nor an example-deltas list).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.iteration import ExampleResult

SYSTEM_PROMPT = (
    "You are a reflector for a steering system that adjusts LLM outputs by cluster. Your task is "
    "to spot padding, verbosity, and fluff in the given model responses and propose per-cluster "
    "steering deltas (a float per cluster id) so that future responses become razor-sharp. You "
    "will receive: (1) cluster descriptions (what each cluster id means), (2) the deltas that "
    "were used for this minibatch (the baseline you are adjusting from), (3) all minibatch model "
    "responses with per-example correctness and explanation, and (4) the evolving summary of "
    "what you have learnt so far (CoT), which you have updated in previous iterations. You must "
    'output a JSON object with two fields: "deltas" (object mapping each cluster id string "0", '
    '"1", ... to a float) and "summary" (your update to the evolving summary: 2–4 sentences on '
    "what you learnt this round—the driver will append this and serve the accumulated evolving "
    "summary back to you in later iterations). Negative deltas discourage tokens in that "
    "cluster; positive can boost. Do not be given any example deltas—propose from reasoning only."
)

USER_TEMPLATE = """\
## Cluster descriptions
{cluster_descriptions_json}

## Deltas used for this minibatch (baseline to adjust from)
{current_deltas_json}

## Evolving summary (what you have learnt so far; you update this each round and it is served \
back to you in later iterations)
{cot_summary}

## All minibatch responses (with correctness and explanation per example)
{all_responses_with_correctness}

---
Spot and eliminate any padding, verbosity, or fluff in these responses. Given the deltas that \
were used for this minibatch (above), propose updated deltas for each cluster so that responses \
become razor-sharp. You must also update the evolving summary: provide 2–4 sentences on what you \
learnt this round (e.g. which clusters added fluff, what you changed, what to try next); this \
update will be appended and served back to you in later iterations. Output only a JSON object \
with two fields: "deltas" (object with string keys "0", "1", ... and float values) and \
"summary" (string, your update to the evolving summary). No other commentary."""

FRONTIER_SECTION = """\
## Pareto frontier of deltas so far (candidates no other beats on every example; what each \
taught)
{lessons}

"""

TRUNCATION_MARKER = " […truncated]"


def select_responses(records: Sequence[ExampleResult], *, k_longest: int) -> list[ExampleResult]:
    """All records (``k_longest == 0``) or the k longest by response tokens, in input order."""
    if k_longest < 0:
        raise ValueError(f"k_longest must be >= 0, got {k_longest}")
    if k_longest == 0 or k_longest >= len(records):
        return list(records)
    ranked = sorted(range(len(records)), key=lambda i: -records[i].response_tokens)
    keep = set(ranked[:k_longest])
    return [record for i, record in enumerate(records) if i in keep]


def truncate(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` characters plus a marker (0 = never).

    >>> truncate("abcdef", 3)
    'abc […truncated]'
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARKER


def format_responses(records: Sequence[ExampleResult], *, max_chars: int) -> str:
    """Render each response with its id, correctness, explanation and length."""
    blocks = []
    for record in records:
        blocks.append(
            f"### Example {record.example_id}\n"
            f"Correct: {'yes' if record.is_correct else 'no'}\n"
            f"Explanation: {record.reasoning}\n"
            f"Response ({record.response_tokens} tokens):\n"
            f"{truncate(record.answer, max_chars)}"
        )
    return "\n\n".join(blocks)


def build_messages(
    *,
    cluster_descriptions: Mapping[str, Any],
    deltas: Mapping[str, float],
    summary: str,
    records: Sequence[ExampleResult],
    k_longest: int,
    max_response_chars: int,
    frontier_lessons: str = "",
) -> list[dict[str, str]]:
    """Return the system and user messages of one reflector request.

    ``frontier_lessons`` (``Frontier.lessons``) adds the frontier section before the responses.
    """
    user = USER_TEMPLATE.format(
        cluster_descriptions_json=json.dumps(cluster_descriptions, indent=2, ensure_ascii=False),
        current_deltas_json=json.dumps(dict(deltas)),
        cot_summary=summary,
        all_responses_with_correctness=format_responses(
            select_responses(records, k_longest=k_longest), max_chars=max_response_chars
        ),
    )
    if frontier_lessons.strip():
        marker = "## All minibatch responses"
        user = user.replace(marker, FRONTIER_SECTION.format(lessons=frontier_lessons) + marker, 1)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


# ---- the evolving summary: the reflector's per-iteration updates, served back --------------

FIRST_ITERATION = "First iteration; no prior learnings."


@dataclass(frozen=True)
class SummaryEntry:
    """One appended update."""

    iteration: int
    text: str


def render_summary(entries: list[SummaryEntry]) -> str:
    """The accumulated summary as the reflector reads it.

    >>> render_summary([])
    'First iteration; no prior learnings.'
    >>> render_summary([SummaryEntry(0, "Cut filler.")])
    '- Iteration 0: Cut filler.'
    """
    if not entries:
        return FIRST_ITERATION
    return "\n".join(f"- Iteration {entry.iteration}: {entry.text}" for entry in entries)


def append_entry(entries: list[SummaryEntry], iteration: int, text: str) -> list[SummaryEntry]:
    """Return ``entries`` plus this iteration's update (replacing one from a repeated iteration)."""
    kept = [entry for entry in entries if entry.iteration != iteration]
    return [*kept, SummaryEntry(iteration, text.strip())]
