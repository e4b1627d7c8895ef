"""Numbers written the way FinanceBench answers write them; exact decimal arithmetic.

>>> from decimal import Decimal
>>> format_usd_millions(Decimal("1577"))
'$1,577.00 million'
>>> format_percent(Decimal("24.46"))
'24.5%'
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
TENTH = Decimal("0.1")


def round_half_up(value: Decimal, quantum: Decimal) -> Decimal:
    """Round like a finance analyst (half away from zero), not banker's rounding."""
    return value.quantize(quantum, rounding=ROUND_HALF_UP)


def format_usd_millions(value: Decimal) -> str:
    """``-1577`` -> ``'-$1,577.00 million'``."""
    rounded = round_half_up(value, CENT)
    sign = "-" if rounded < 0 else ""  # a value that rounds to zero gets no sign
    return f"{sign}${abs(rounded):,.2f} million"


def format_percent(value: Decimal) -> str:
    """A percentage with one decimal: ``12.345`` -> ``'12.3%'``."""
    rounded = round_half_up(value, TENTH)
    return f"{abs(rounded) if rounded == 0 else rounded:.1f}%"  # never "-0.0%"


def format_ratio(value: Decimal) -> str:
    """A plain ratio with two decimals: ``1.2345`` -> ``'1.23'``."""
    rounded = round_half_up(value, CENT)
    return f"{abs(rounded) if rounded == 0 else rounded:.2f}"
