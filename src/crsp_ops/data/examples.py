"""Row records of the two datasets, with the field names of the real datasets."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LimoExample:
    """One LIMO row (GAIR/LIMO schema)."""

    question: str  # the problem statement
    solution: str  # step-by-step reasoning, ending in \boxed{answer}
    answer: str  # the final answer

    def to_row(self) -> dict[str, str]:
        """The row as written to JSONL."""
        return asdict(self)


@dataclass(frozen=True)
class FinanceBenchEvidence:
    """One evidence item of a FinanceBench row."""

    evidence_text: str  # the passage that supports the answer
    doc_name: str  # the filing it comes from, e.g. "3M_2018_10K"
    evidence_page_num: int | None  # 0-based page in the filing, when known
    evidence_text_full_page: str  # the whole page ("" when the source has none)


@dataclass(frozen=True)
class FinanceBenchExample:
    """One FinanceBench row (financebench_open_source.jsonl schema)."""

    financebench_id: str  # unique id, e.g. "financebench_id_03029"
    company: str
    doc_name: str
    question_type: str  # e.g. "metrics-generated"
    question_reasoning: str  # e.g. "Information extraction", "" when the source has null
    question: str
    answer: str  # gold answer, e.g. "$1577.00" or "24.5%"
    justification: str  # how the answer follows from the evidence ("" when absent)
    evidence: tuple[FinanceBenchEvidence, ...]  # at least one item

    def to_row(self) -> dict[str, Any]:
        """The row as written to JSONL (evidence as a list of objects)."""
        row = asdict(self)
        row["evidence"] = [asdict(item) for item in self.evidence]
        return row

    @property
    def evidence_passage(self) -> str:
        """All evidence texts joined by blank lines: the context a prompt shows."""
        return "\n\n".join(item.evidence_text for item in self.evidence)
