"""Turn raw option values (text or YAML scalars) into typed, range-checked Python values."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.schema import OptionSpec

_TRUE = {"y", "yes", "true", "1", "on"}
_FALSE = {"n", "no", "false", "0", "off", ""}


def parse_value(
    spec: OptionSpec, kind: Any, bounds: Mapping[str, Any], raw: Any, origin: str
) -> Any:
    """Coerce ``raw`` to the field's type and check it against the Kconfig range or bounds.

    Args:
        spec: the Kconfig declaration of the option.
        kind: the resolved Python type of the settings field (``int``, ``tuple[str, ...]``...).
        bounds: the field's metadata (``low``/``high``/``open_low`` for floats).
        raw: text (Kconfig, .config, command line) or a YAML value (params.yaml).
        origin: where the value came from, for error messages (a file or "--set").

    Raises:
        ConfigError: naming the key, the value and the origin.
    """
    try:
        value = _coerce(kind, raw)
    except (TypeError, ValueError) as error:
        raise ConfigError(
            f"{origin}: {spec.key} = {raw!r}: expected {_type_name(kind)} ({error})"
        ) from None
    _check(spec, bounds, value, origin)
    return value


def _coerce(kind: Any, raw: Any) -> Any:
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise ValueError("use y/n or true/false")
    if kind is int:
        if isinstance(raw, bool) or isinstance(raw, float):
            raise ValueError("not an integer")
        return int(raw.strip(), 0) if isinstance(raw, str) else int(raw)
    if kind is float:
        if isinstance(raw, bool):
            raise ValueError("not a number")
        value = float(raw.strip()) if isinstance(raw, str) else float(raw)
        if not math.isfinite(value):
            raise ValueError("not finite")
        return value
    if kind is str:
        if not isinstance(raw, str):
            raise ValueError("not a string")
        return raw
    origin = typing.get_origin(kind)
    if origin is tuple:
        (item_kind, _ellipsis) = typing.get_args(kind)
        if isinstance(raw, str):
            items = [part.strip() for part in raw.split(",") if part.strip()]
        elif isinstance(raw, (list, tuple)):
            items = list(raw)
        else:
            raise ValueError("not a list")
        return tuple(_coerce(item_kind, item) for item in items)
    raise TypeError(f"unsupported settings type {kind}")


def _check(spec: OptionSpec, bounds: Mapping[str, Any], value: Any, origin: str) -> None:
    if spec.kind == "choice" and value not in spec.choices:
        raise ConfigError(f"{origin}: {spec.key} = {value!r}: choose one of {list(spec.choices)}")
    if spec.int_range is not None:
        low, high = spec.int_range
        if not low <= value <= high:
            raise ConfigError(f"{origin}: {spec.key} = {value!r}: out of range [{low}, {high}]")
    low, high = bounds.get("low"), bounds.get("high")
    if low is not None:
        too_low = value <= low if bounds.get("open_low") else value < low
        if too_low:
            bracket = "(" if bounds.get("open_low") else "["
            raise ConfigError(
                f"{origin}: {spec.key} = {value!r}: out of range {bracket}{low}, {high}]"
            )
    if high is not None and value > high:
        raise ConfigError(f"{origin}: {spec.key} = {value!r}: out of range [{low}, {high}]")


def to_text(value: Any) -> str:
    """Render a typed value the way Kconfig/.config spells it (floats as strings, lists CSV)."""
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, tuple):
        return ",".join(to_text(item) for item in value)
    return str(value)


def to_yaml(value: Any) -> Any:
    """Render a typed value for params.yaml (tuples become lists)."""
    return list(value) if isinstance(value, tuple) else value


def _type_name(kind: Any) -> str:
    if isinstance(kind, type):
        return {"str": "a string", "int": "an integer", "float": "a number", "bool": "y/n"}.get(
            kind.__name__, kind.__name__
        )
    if isinstance(kind, types.GenericAlias):
        return f"a comma-separated list of {_type_name(typing.get_args(kind)[0])}"
    return str(kind)
