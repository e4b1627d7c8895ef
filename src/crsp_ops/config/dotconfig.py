"""Strict reader of Kconfig ``.config`` files (the user's choices written by menuconfig)."""

from __future__ import annotations

import re
from pathlib import Path

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.schema import OptionSpec

_ASSIGN = re.compile(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$")
_NOT_SET = re.compile(r"^# CONFIG_([A-Za-z0-9_]+) is not set$")
_STRING = re.compile(r'^"((?:[^"\\]|\\.)*)"$')


def read_dotconfig(path: Path, specs: dict[str, OptionSpec]) -> dict[str, str]:
    """Return ``{key: raw text}`` for every option ``path`` sets.

    Unlike kconfiglib's loader, which warns and carries on, any malformed line, unknown symbol
    or value of the wrong shape is an error naming the file and line.
    """
    by_symbol = {spec.symbol: spec for spec in specs.values()}
    members = {
        f"{spec.symbol}_{value.upper()}": (spec, value)
        for spec in specs.values()
        if spec.kind == "choice"
        for value in spec.choices
    }
    values: dict[str, str] = {}
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{path}:{number}"
        stripped = line.strip()
        if not stripped:
            continue
        unset = _NOT_SET.match(stripped)
        if unset:
            name = unset.group(1)
            if name in members:
                continue  # an unselected choice entry says nothing on its own
            spec = by_symbol.get(name)
            if spec is None:
                raise ConfigError(f"{where}: unknown option CONFIG_{name}")
            if spec.kind != "bool":
                raise ConfigError(f"{where}: CONFIG_{name} ({spec.kind}) cannot be 'not set'")
            values[spec.key] = "n"
            continue
        if stripped.startswith("#"):
            continue
        assign = _ASSIGN.match(stripped)
        if not assign:
            raise ConfigError(f"{where}: malformed line {line!r} (expected CONFIG_NAME=value)")
        name, raw = assign.groups()
        if name in members:
            spec, choice_value = members[name]
            if raw != "y":
                raise ConfigError(f"{where}: choice entry CONFIG_{name} must be =y, got {raw!r}")
            values[spec.key] = choice_value
            continue
        spec = by_symbol.get(name)
        if spec is None:
            raise ConfigError(f"{where}: unknown option CONFIG_{name}")
        values[spec.key] = _raw_value(spec, raw, where)
    return values


def _raw_value(spec: OptionSpec, raw: str, where: str) -> str:
    if spec.kind == "string":
        quoted = _STRING.match(raw)
        if not quoted:
            raise ConfigError(f"{where}: CONFIG_{spec.symbol}={raw}: strings must be quoted")
        return re.sub(r"\\(.)", r"\1", quoted.group(1))
    if spec.kind == "bool" and raw not in {"y", "n"}:
        raise ConfigError(f"{where}: CONFIG_{spec.symbol}={raw}: expected y or n")
    return raw
