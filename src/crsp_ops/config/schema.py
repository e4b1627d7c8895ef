"""Read the Kconfig declarations: the one home of every option's type, default and help."""

from __future__ import annotations

import io
from collections.abc import Iterable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from crsp_ops.config.errors import ConfigError
from crsp_ops.paths import point_at_packaged_kconfig


@dataclass(frozen=True)
class OptionSpec:
    """One declared option."""

    key: str  # "section.name", e.g. "evolve.iterations"
    symbol: str  # Kconfig symbol (or choice) name, e.g. "EVOLVE_ITERATIONS"
    kind: str  # "bool" | "int" | "string" | "choice"
    default: str  # Kconfig's default as text: "y"/"n", "20", "0.05", or the choice value
    help: str
    int_range: tuple[int, int] | None = None  # inclusive bounds of an int
    choices: tuple[str, ...] = ()  # values of a choice, e.g. ("auto", "cpu", "cuda")


def key_for_symbol(symbol: str, sections: Iterable[str]) -> str:
    """Map ``EVOLVE_MAX_ITERS`` to ``evolve.max_iters`` by the longest matching section prefix.

    >>> key_for_symbol("MODEL_TINY_LAYERS", ["model", "limo"])
    'model.tiny_layers'
    """
    matches = [s for s in sections if symbol.startswith(s.upper() + "_")]
    if not matches:
        raise ConfigError(f"Kconfig symbol {symbol} does not start with a known section prefix")
    section = max(matches, key=len)
    return f"{section}.{symbol[len(section) + 1:].lower()}"


@lru_cache(maxsize=8)
def _load(path: str, sections: tuple[str, ...]) -> tuple[OptionSpec, ...]:
    import kconfiglib

    if not Path(path).is_file():
        raise ConfigError(f"{path}: Kconfig file not found")
    point_at_packaged_kconfig()
    sink = io.StringIO()
    try:
        with redirect_stdout(sink), redirect_stderr(sink):
            kconf = kconfiglib.Kconfig(path, warn_to_stderr=False, suppress_traceback=True)
    except (kconfiglib.KconfigError, SystemExit) as error:
        raise ConfigError(f"{path}: cannot parse Kconfig: {error or sink.getvalue()}") from None
    if kconf.warnings:
        raise ConfigError(f"{path}: Kconfig warnings: " + "; ".join(kconf.warnings))

    specs = [_spec(item, sections, path) for item in _declared_items(kconf)]
    keys = [spec.key for spec in specs]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise ConfigError(f"{path}: options declared twice: {sorted(duplicates)}")
    return tuple(specs)


def _choice_value(choice_name: str, member: str) -> str:
    prefix = choice_name + "_"
    if not member.startswith(prefix):
        raise ConfigError(f"choice {choice_name}: member {member} must be named {prefix}<VALUE>")
    return member[len(prefix):].lower()


def _help(item) -> str:
    return " ".join(" ".join((node.help or "").split()) for node in item.nodes).strip()


def _declared_items(kconf) -> list:
    """Choices and free symbols in menu order (choice members are folded into their choice)."""
    import kconfiglib

    items, seen = [], set()
    for node in kconf.node_iter():
        item = node.item
        if isinstance(item, kconfiglib.Choice) or (
            isinstance(item, kconfiglib.Symbol) and item.choice is None
        ):
            if id(item) not in seen:
                seen.add(id(item))
                items.append(item)
    return items


def _spec(item, sections: Iterable[str], path: str) -> OptionSpec:
    import kconfiglib

    if isinstance(item, kconfiglib.Choice):
        if not item.name:
            raise ConfigError(f"{path}: every choice must be named (SECTION_KEY)")
        return OptionSpec(
            key=key_for_symbol(item.name, sections),
            symbol=item.name,
            kind="choice",
            default=_choice_value(item.name, item.selection.name),
            help=_help(item),
            choices=tuple(_choice_value(item.name, sym.name) for sym in item.syms),
        )
    kind = kconfiglib.TYPE_TO_STR[item.orig_type]
    if kind not in {"bool", "int", "string"}:
        raise ConfigError(f"{path}: {item.name} has unsupported type {kind}")
    int_range = None
    if kind == "int" and item.ranges:
        low, high, *_ = item.ranges[0]
        int_range = (int(low.str_value), int(high.str_value))
    return OptionSpec(
        key=key_for_symbol(item.name, sections),
        symbol=item.name,
        kind=kind,
        default=item.str_value,
        help=_help(item),
        int_range=int_range,
    )


def load_schema(path: str | Path, sections: Iterable[str]) -> dict[str, OptionSpec]:
    """Parse ``path`` (a Kconfig file) into ``{key: OptionSpec}``, in declaration order."""
    specs = _load(str(Path(path).resolve()), tuple(sorted(sections)))
    return {spec.key: spec for spec in specs}
