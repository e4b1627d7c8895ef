"""Settings the pages quote, checked against the code's values.

A registry entry whose split is ``not a claim: setting (...)`` may bind its quotes to the
values they state: ``"settings": [[anchor, number, target], ...]``, each naming one of the
entry's quotes by its anchor and number. ``target`` is where the value lives:

- ``config:<section.key>``: the packaged Kconfig's default (``train.ratio_clip``);
- ``python:<module>:<name>[.attr|[index]]...``: a module constant
  (``crsp_ops.crsp.rewards.alpha_schedule:RLSP_MID.alpha_s``, ``...:PHASE_BREAKS[0]``).

The quote must state the value exactly: a decimal its digits (``0.2`` for 0.2, not for 0.21),
a percentage a hundredth of it or itself (``40%`` for 0.4 or 40), with its sign. On the design
notes (docs/design/*.md), which describe the code, every quote of a setting entry must be
bound, so a changed default fails the check until its page says the new value.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import cache

from crsp_ops.config.resolve import schema_for
from crsp_ops.config.schema import OptionSpec
from crsp_ops.paths import PACKAGED_KCONFIG
from lab.quoted_numbers import signed
from lab.registry import NOT_A_CLAIM, REGISTRY, Claim

BOUND_PAGES = "docs/design/"  # pages whose setting quotes must each be bound
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")


@cache
def _packaged_options() -> dict[str, OptionSpec]:
    return schema_for(PACKAGED_KCONFIG.parent)  # the packaged declarations, checked


def config_default(key: str) -> str:
    """The packaged Kconfig's default of ``key`` (``section.name``), as text."""
    specs = _packaged_options()
    if key not in specs:
        raise LookupError(f"no option {key!r} in {PACKAGED_KCONFIG}")
    return specs[key].default


def python_value(path: str) -> object:
    """The value at ``module:name`` followed by ``.attr`` and ``[index]`` steps."""
    module, _, rest = path.partition(":")
    name = re.match(r"\w+", rest)
    if not module or not name:
        raise LookupError(f"{path!r} is not module:name[.attr|[index]]...")
    tail = rest[name.end():]
    steps = list(_STEP.finditer(tail))
    if "".join(m.group(0) for m in steps) != tail:
        raise LookupError(f"{path!r}: cannot read the steps {tail!r}")
    value = getattr(importlib.import_module(module), name.group(0))
    for found in steps:
        value = getattr(value, found.group(1)) if found.group(1) else value[int(found.group(2))]
    return value


def code_value(target: str) -> object:
    """The value ``target`` (``config:...`` or ``python:...``) names."""
    kind, _, where = target.partition(":")
    if kind == "config":
        return config_default(where)
    if kind == "python":
        return python_value(where)
    raise LookupError(f"target {target!r}: use config:<section.key> or python:<module>:<name>")


def states(quoted: str, value: object) -> bool:
    """Whether the quote states ``value`` exactly (a percentage: a hundredth of it, or it).

    >>> states("0.2", 0.2), states("0.2", 0.21), states("40%", 0.4), states("-0.5", 0.5)
    (True, False, True, False)
    """
    text = signed(quoted)
    try:
        number = Decimal(text.rstrip("%"))
        actual = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return False
    return actual == number or (text.endswith("%") and actual * 100 == number)


def check_settings(claims: list[Claim],
                   value_of: Callable[[str], object] = code_value) -> list[str]:
    """Every bound quote whose code value differs, every binding that names no quote of its
    entry, and every unbound quote of a setting entry on the design notes."""
    failures = []
    for claim in claims:
        where = f"{REGISTRY}:{claim.line}"
        bound = set()
        for anchor, number, target in claim.settings:
            place = next((q for q in claim.quotes if q[1:] == (anchor, signed(number))), None)
            if place is None:
                failures.append(f"{where}: setting {number} after {anchor!r} is none of the "
                                "entry's quotes")
                continue
            bound.add(place)
            try:
                value = value_of(target)
            except (LookupError, AttributeError, ImportError, IndexError) as error:
                failures.append(f"{where}: {target}: {error}")
                continue
            if not states(number, value):
                failures.append(f"{place[0]}: {number} after {anchor!r} says {target} is "
                                f"{number}, the code has {value}")
        if claim.split.startswith(f"{NOT_A_CLAIM}setting"):
            failures += [f"{q[0]}: setting {q[2]} after {q[1]!r} is not bound to the code's "
                         f"value (\"settings\" in {where})" for q in claim.quotes
                         if q[0].startswith(BOUND_PAGES) and q not in bound]
    return failures

