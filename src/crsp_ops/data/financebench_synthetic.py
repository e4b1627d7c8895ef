"""Seeded generator of FinanceBench-format rows over synthetic filing facts.

Each row is one fictional company-year "filing": a few line items (revenue, net income, capital
expenditures, ...) for the fiscal year and the one before, stated in an evidence passage, and one
question about them: an extraction, a difference, a percentage change, a margin or a ratio. Values
are whole USD millions, so answers are exact; arithmetic uses ``Decimal``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from crsp_ops.data.answer_format import format_percent, format_ratio, format_usd_millions
from crsp_ops.data.examples import FinanceBenchEvidence, FinanceBenchExample

HUNDRED = Decimal(100)
DEFAULT_MAX_REVENUE = 90_000  # USD millions: figures of up to five digits


@dataclass(frozen=True)
class LineItem:
    """One line item of a synthetic filing, in USD millions."""

    key: str  # e.g. "net_income"
    label: str  # e.g. "net income", as written in the passage and the question
    current: int  # fiscal year value
    previous: int  # prior fiscal year value


@dataclass(frozen=True)
class Filing:
    """The facts of one synthetic company-year."""

    company: str
    fiscal_year: int
    items: dict[str, LineItem]  # key -> line item, in passage order

    @property
    def doc_name(self) -> str:
        """FinanceBench-style document name, e.g. ``Northwind_2021_10K``."""
        return f"{self.company.replace(' ', '')}_{self.fiscal_year}_10K"


@dataclass(frozen=True)
class QuestionSpec:
    """A question with its exact answer, before it becomes a row."""

    reasoning: str  # FinanceBench question_reasoning
    question: str
    answer: str
    justification: str
    used_keys: tuple[str, ...]  # line items the evidence must state


def generate_financebench_examples(*, count: int, seed: int,
                                   max_revenue: int = DEFAULT_MAX_REVENUE,
                                   ) -> list[FinanceBenchExample]:
    """Return ``count`` synthetic FinanceBench rows; the same ``seed`` gives the same rows.

    Args:
        count: number of rows (>= 0).
        seed: seed of the generator.
        max_revenue: the largest revenue in USD millions (>= 180); revenues are drawn from
            ``[max_revenue // 180, max_revenue]``, the other figures are shares of them.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if max_revenue < 180:
        raise ValueError(f"max_revenue must be >= 180, got {max_revenue}")
    rng = random.Random(seed)
    return [_example(rng, index, max_revenue=max_revenue) for index in range(count)]


def evidence_sentence(item: LineItem, fiscal_year: int) -> str:
    """The sentence of the passage that states one line item for both years."""
    return (
        f"{item.label.capitalize()} {_verb(item.label)} ${item.current:,} million in fiscal "
        f"{fiscal_year}, "
        f"compared with ${item.previous:,} million in fiscal {fiscal_year - 1}."
    )


def _verb(label: str) -> str:
    return "were" if label.endswith("s") else "was"


def _example(rng: random.Random, index: int, max_revenue: int) -> FinanceBenchExample:
    filing = _filing(rng, max_revenue)
    spec = rng.choice(QUESTION_KINDS)(rng, filing)
    # The passage states the items the question needs plus one distractor, in a shuffled order,
    # so the answer is obtainable but has to be found.
    others = [key for key in filing.items if key not in spec.used_keys]
    keys = list(spec.used_keys) + rng.sample(others, 1)
    rng.shuffle(keys)
    header = f"{filing.company} — consolidated financial data, fiscal {filing.fiscal_year}."
    sentences = [evidence_sentence(filing.items[key], filing.fiscal_year) for key in keys]
    passage = " ".join([header, *sentences])
    return FinanceBenchExample(
        financebench_id=f"financebench_synthetic_{index:05d}",
        company=filing.company,
        doc_name=filing.doc_name,
        question_type="metrics-generated",
        question_reasoning=spec.reasoning,
        question=spec.question,
        answer=spec.answer,
        justification=spec.justification,
        evidence=(
            FinanceBenchEvidence(
                evidence_text=passage,
                doc_name=filing.doc_name,
                evidence_page_num=rng.randint(20, 120),
                evidence_text_full_page=passage,
            ),
        ),
    )


def _filing(rng: random.Random, max_revenue: int) -> Filing:
    revenue = rng.randint(max_revenue // 180, max_revenue)

    def share(low: float, high: float) -> int:
        return max(1, round(revenue * rng.uniform(low, high)))

    currents = {
        "revenue": revenue,
        "operating_income": share(0.08, 0.35),
        "net_income": share(0.02, 0.07),
        "capital_expenditures": share(0.01, 0.12),
        "total_assets": share(0.6, 3.0),
        "cash": share(0.03, 0.3),
    }
    items = {}
    for key, current in currents.items():
        growth = rng.uniform(-0.15, 0.30)
        previous = max(1, round(current / (1 + growth)))
        items[key] = LineItem(key=key, label=LABELS[key], current=current, previous=previous)
    return Filing(company=rng.choice(COMPANIES), fiscal_year=rng.randint(2015, 2023), items=items)


def _extraction(rng: random.Random, filing: Filing) -> QuestionSpec:
    item = filing.items[rng.choice(list(filing.items))]
    year = filing.fiscal_year
    return QuestionSpec(
        reasoning="Information extraction",
        question=f"What was {filing.company}'s {item.label} in fiscal {year}, in USD millions?",
        answer=format_usd_millions(Decimal(item.current)),
        justification=f"The filing states {item.label} of ${item.current:,} million for {year}.",
        used_keys=(item.key,),
    )


def _difference(rng: random.Random, filing: Filing) -> QuestionSpec:
    item = filing.items[rng.choice(list(filing.items))]
    year = filing.fiscal_year
    change = Decimal(item.current - item.previous)
    return QuestionSpec(
        reasoning="Numerical reasoning",
        question=(
            f"By how much did {filing.company}'s {item.label} change from fiscal {year - 1} to "
            f"fiscal {year}, in USD millions?"
        ),
        answer=format_usd_millions(change),
        justification=f"{item.current:,} − {item.previous:,} = {change:,}.",
        used_keys=(item.key,),
    )


def _percent_change(rng: random.Random, filing: Filing) -> QuestionSpec:
    item = filing.items[rng.choice(list(filing.items))]
    year = filing.fiscal_year
    change = (Decimal(item.current) - item.previous) / item.previous * HUNDRED
    return QuestionSpec(
        reasoning="Numerical reasoning",
        question=(
            f"What was the percentage change in {filing.company}'s {item.label} from fiscal "
            f"{year - 1} to fiscal {year}?"
        ),
        answer=format_percent(change),
        justification=f"({item.current:,} − {item.previous:,}) / {item.previous:,} × 100.",
        used_keys=(item.key,),
    )


def _margin(rng: random.Random, filing: Filing) -> QuestionSpec:
    key, name = rng.choice(MARGINS)
    item, revenue = filing.items[key], filing.items["revenue"]
    margin = Decimal(item.current) / revenue.current * HUNDRED
    return QuestionSpec(
        reasoning="Numerical reasoning",
        question=(
            f"What was {filing.company}'s {name} ({item.label} divided by revenue) in fiscal "
            f"{filing.fiscal_year}, in percent?"
        ),
        answer=format_percent(margin),
        justification=f"{item.current:,} / {revenue.current:,} × 100.",
        used_keys=(key, "revenue"),
    )


def _asset_turnover(rng: random.Random, filing: Filing) -> QuestionSpec:
    revenue, assets = filing.items["revenue"], filing.items["total_assets"]
    ratio = Decimal(revenue.current) / assets.current
    return QuestionSpec(
        reasoning="Numerical reasoning",
        question=(
            f"What was {filing.company}'s asset turnover ratio (revenue divided by total assets) "
            f"in fiscal {filing.fiscal_year}? Round to two decimal places."
        ),
        answer=format_ratio(ratio),
        justification=f"{revenue.current:,} / {assets.current:,}.",
        used_keys=("revenue", "total_assets"),
    )


LABELS = {
    "revenue": "revenue",
    "operating_income": "operating income",
    "net_income": "net income",
    "capital_expenditures": "capital expenditures",
    "total_assets": "total assets",
    "cash": "cash and cash equivalents",
}
MARGINS = (
    ("net_income", "net profit margin"),
    ("operating_income", "operating margin"),
    ("capital_expenditures", "capital intensity"),
)
COMPANIES = (
    "Northwind Traders",
    "Contoso Energy",
    "Fabrikam Foods",
    "Tailspin Airlines",
    "Litware Systems",
    "Proseware Health",
    "Adatum Retail",
    "Woodgrove Financial",
    "Alpine Ski House",
    "Blue Yonder Logistics",
)
# Extraction appears twice so about 40% of rows are plain look-ups, the rest arithmetic.
QUESTION_KINDS: tuple[Callable[[random.Random, Filing], QuestionSpec], ...] = (
    _extraction,
    _extraction,
    _difference,
    _percent_change,
    _margin,
    _asset_turnover,
)
