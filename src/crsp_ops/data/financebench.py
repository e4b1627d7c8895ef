"""FinanceBench-format data: load, validate, split into pool and held-out, render prompts.

Sources: a local ``.jsonl``/``.json``/``.parquet`` file in the schema of the open-source set
(``financebench_open_source.jsonl``), or ``synthetic`` (the offline default).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from crsp_ops.data.examples import FinanceBenchEvidence, FinanceBenchExample
from crsp_ops.data.financebench_synthetic import DEFAULT_MAX_REVENUE, generate_financebench_examples
from crsp_ops.data.load_result import LoadResult, RowError, SkipTally, warn_skipped
from crsp_ops.data.row_fields import (
    optional_int,
    optional_str,
    required_str,
    required_text_or_number,
)
from crsp_ops.data.row_files import iter_raw_rows
from crsp_ops.errors import DataError

SYNTHETIC_SOURCE = "synthetic"

T = TypeVar("T")


def parse_financebench_row(row: Any) -> FinanceBenchExample:
    """Validate one raw row of the open-source set's schema.

    ``financebench_id`` and ``question`` must be non-empty strings, ``answer`` a non-empty
    string or a number (a bare numeric gold, kept as text: ``1577.0`` → "1577"), and ``evidence``
    a non-empty list of objects with a non-empty ``evidence_text``; the descriptive fields may be
    null (the real set has null ``question_reasoning`` on some rows) but not another type.

    Raises:
        RowError: naming the first missing or mistyped field.
    """
    if not isinstance(row, Mapping):
        raise RowError(f"row is {type(row).__name__}, expected an object")
    evidence = row.get("evidence")
    if evidence is None:
        raise RowError("missing field 'evidence'")
    if not isinstance(evidence, list) or not evidence:
        raise RowError("field 'evidence' must be a non-empty list")
    return FinanceBenchExample(
        financebench_id=required_str(row, "financebench_id"),
        company=optional_str(row, "company"),
        doc_name=optional_str(row, "doc_name"),
        question_type=optional_str(row, "question_type"),
        question_reasoning=optional_str(row, "question_reasoning"),
        question=required_str(row, "question"),
        answer=required_text_or_number(row, "answer"),
        justification=optional_str(row, "justification"),
        evidence=tuple(_parse_evidence(item) for item in evidence),
    )


def _parse_evidence(item: Any) -> FinanceBenchEvidence:
    if not isinstance(item, Mapping):
        raise RowError(f"evidence item is {type(item).__name__}, expected an object")
    # Some copies of the set name the document field evidence_doc_name.
    doc_key = "doc_name" if "doc_name" in item else "evidence_doc_name"
    return FinanceBenchEvidence(
        evidence_text=required_str(item, "evidence_text"),
        doc_name=optional_str(item, doc_key),
        evidence_page_num=optional_int(item, "evidence_page_num"),
        evidence_text_full_page=optional_str(item, "evidence_text_full_page"),
    )


def parse_financebench_rows(raw_rows: Iterable[Any], tally: SkipTally) -> list[FinanceBenchExample]:
    """Parse raw rows, recording each invalid one in ``tally`` instead of raising."""
    examples = []
    for raw in raw_rows:
        try:
            examples.append(parse_financebench_row(raw))
        except RowError as error:
            tally.skip(str(error))
    return examples


def load_financebench(
    source: str, *, synthetic_count: int, seed: int, max_revenue: int = DEFAULT_MAX_REVENUE
) -> LoadResult[FinanceBenchExample]:
    """Load FinanceBench rows from ``source``.

    Args:
        source: ``synthetic`` or a path to a local file in the open-source set's schema.
        synthetic_count: rows to generate when ``source`` is ``synthetic``.
        seed: generator seed when ``source`` is ``synthetic``.
        max_revenue: the synthetic filings' largest revenue (USD millions; figure scale).

    Raises:
        FileNotFoundError: a local file does not exist.
        ValueError: a local file holds no valid row.
    """
    if source == SYNTHETIC_SOURCE:
        if synthetic_count < 1:
            raise ValueError(f"synthetic_count must be >= 1, got {synthetic_count}")
        rows = generate_financebench_examples(count=synthetic_count, seed=seed,
                                              max_revenue=max_revenue)
        return LoadResult(rows=tuple(rows), n_skipped=0, skipped_reasons={})
    tally = SkipTally()
    raw_rows = iter_raw_rows(Path(source), lambda _line, why: tally.skip(why))
    result = tally.result(parse_financebench_rows(raw_rows, tally))
    if not result.rows:
        raise DataError(
            f"no valid FinanceBench row in {source} ({result.n_skipped} skipped: "
            f"{_top_reasons(result)}); each row needs financebench_id, question, answer"
            " and a non-empty evidence list"
        )
    warn_skipped(result, source)
    ids = [row.financebench_id for row in result.rows]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"{source}: duplicate financebench_id {duplicate!r}; ids must be unique")
    return result


def split_pool_heldout(
    rows: Sequence[T], *, heldout_size: int, seed: int
) -> tuple[list[T], list[T]]:
    """Split rows into a pool and a held-out set, deterministically.

    A seeded permutation picks the held-out rows; both parts keep the source order, so adding
    the same seed and size to the same rows always gives the same split.

    Args:
        rows: all rows.
        heldout_size: rows to hold out (0 <= heldout_size < len(rows)).
        seed: seed of the permutation.

    Returns:
        ``(pool, heldout)``.
    """
    if not 0 <= heldout_size < len(rows):
        raise ValueError(
            f"heldout_size must be in [0, {len(rows)}) for {len(rows)} rows, got {heldout_size}"
        )
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    held = set(order[:heldout_size])
    pool = [row for i, row in enumerate(rows) if i not in held]
    heldout = [row for i, row in enumerate(rows) if i in held]
    return pool, heldout


def render_question_prompt(example: FinanceBenchExample, *, template: str) -> str:
    r"""The user message for one question: ``template`` with ``{evidence}`` and ``{question}``.

    The evidence passage goes into the prompt so that the answer is obtainable from it.

    >>> from crsp_ops.data.examples import FinanceBenchEvidence, FinanceBenchExample
    >>> ev = (FinanceBenchEvidence("Revenue was $5 million.", "", None, ""),)
    >>> ex = FinanceBenchExample("1", "", "", "", "", "What was revenue?", "$5", "", ev)
    >>> render_question_prompt(ex, template="{evidence}\nQ: {question}")
    'Revenue was $5 million.\nQ: What was revenue?'
    """
    return template.format(evidence=example.evidence_passage, question=example.question)


def _top_reasons(result: LoadResult) -> str:
    reasons = sorted(result.skipped_reasons.items(), key=lambda item: -item[1])[:3]
    return "; ".join(f"{why} x{count}" for why, count in reasons) or "the file is empty"
