"""Resolve the effective settings of a run, each value remembering where it came from.

Precedence, lowest first: Kconfig (or ``train.preset``), ``.config``, ``params.yaml``,
``--set``, then ``MLFLOW_TRACKING_URI`` for the tracking URI.

Design: docs/design/platform.md#resolve.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_type_hints

from crsp_ops.config.dotconfig import read_dotconfig
from crsp_ops.config.errors import ConfigError
from crsp_ops.config.params_file import read_params, write_params
from crsp_ops.config.schema import OptionSpec, load_schema
from crsp_ops.config.sections import SECTION_TYPES, Settings
from crsp_ops.config.selfplay_config import apply_epochs
from crsp_ops.config.train_presets import apply_preset
from crsp_ops.config.trl_fields import trl_name_hint
from crsp_ops.config.values import parse_value, to_yaml
from crsp_ops.paths import kconfig_file, project_root

ENV_OVERRIDES = {"tracking.uri": "MLFLOW_TRACKING_URI"}


@dataclass(frozen=True)
class ResolvedConfig:
    """Settings plus the origin of every value (for ``config show`` and the run's params)."""

    settings: Settings
    sources: dict[str, str]  # key -> "Kconfig" | ".config" | "params.yaml" | "--set" | "env:..."
    root: Path


def schema_for(root: Path) -> dict[str, OptionSpec]:
    """The Kconfig declarations of ``root`` (its own or the packaged ones), checked."""
    kconfig = kconfig_file(root)
    specs = load_schema(kconfig, SECTION_TYPES)
    declared = set(specs)
    typed = {
        f"{section}.{name}"
        for section, cls in SECTION_TYPES.items()
        for name in get_type_hints(cls)
    }
    if declared != typed:
        raise ConfigError(
            f"{kconfig} and crsp_ops.config.sections disagree: "
            f"declared only in Kconfig {sorted(declared - typed)}, "
            f"typed only in sections {sorted(typed - declared)}"
        )
    return specs


def load_settings(
    root: Path | None = None,
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> ResolvedConfig:
    """Resolve the effective settings (precedence: docs/design/platform.md#resolve).

    Args:
        root: project root holding Kconfig (default: found from the working directory).
        overrides: ``section.key=value`` strings, e.g. from ``--set``.
        env: environment to read overrides from (default: ``os.environ``).

    Raises:
        ConfigError: for an unknown key, a wrong type, an out-of-range value, a malformed
            .config line, or params.yaml out of sync with .config.
    """
    root = Path(root).resolve() if root is not None else project_root()
    env = os.environ if env is None else env
    specs = schema_for(root)
    values, sources = _configured_values(root, specs)

    params_path = _project_file(root, "params.yaml")
    if params_path is not None:
        _apply_params(params_path, root, specs, values, sources)

    for item in overrides:
        key, raw = _split_override(item, specs)
        values[key] = _typed(specs[key], raw, "--set")
        sources[key] = "--set"
    for key, variable in ENV_OVERRIDES.items():
        if env.get(variable):
            values[key] = _typed(specs[key], env[variable], f"${variable}")
            sources[key] = f"env:{variable}"
    apply_preset(values, sources)
    apply_epochs(values, sources)
    return ResolvedConfig(settings=_build(values), sources=sources, root=root)


def sync_params(root: Path) -> Path:
    """Write params.yaml from Kconfig defaults and .config; return its path."""
    specs = schema_for(root)
    values, _ = _configured_values(root, specs)
    sections: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        section, name = key.split(".", 1)
        sections.setdefault(section, {})[name] = to_yaml(value)
    _build(values)  # cross-field validation before anything is written
    return write_params(root / "params.yaml", sections, _dotconfig_sha(root))


def _configured_values(
    root: Path, specs: dict[str, OptionSpec]
) -> tuple[dict[str, Any], dict[str, str]]:
    values = {key: _typed(spec, spec.default, "Kconfig") for key, spec in specs.items()}
    sources = dict.fromkeys(specs, "Kconfig")
    dotconfig = _project_file(root, ".config")
    if dotconfig is not None:
        for key, raw in read_dotconfig(dotconfig, specs).items():
            values[key] = _typed(specs[key], raw, str(dotconfig))
            sources[key] = ".config"
    return values, sources


def _apply_params(
    path: Path,
    root: Path,
    specs: dict[str, OptionSpec],
    values: dict[str, Any],
    sources: dict[str, str],
) -> None:
    data, recorded_sha = read_params(path)
    from_params: dict[str, Any] = {}
    for section, options in data.items():
        for name, raw in options.items():
            key = f"{section}.{name}"
            if key not in specs:
                raise ConfigError(f"{path}: unknown option {key}{_suggest(key, specs)}")
            from_params[key] = _typed(specs[key], raw, str(path))
    missing = sorted(set(specs) - set(from_params))
    if missing:
        raise ConfigError(
            f"{path}: missing options {missing} (declared in Kconfig): run `crsp-ops config sync`"
        )
    dotconfig_sha = _dotconfig_sha(root)
    if dotconfig_sha is not None and dotconfig_sha != recorded_sha:
        stale = [k for k in specs if sources[k] == ".config" and values[k] != from_params[k]]
        if stale:
            key = stale[0]
            raise ConfigError(
                f"{path} is out of sync with {root / '.config'}: {key} is "
                f"{from_params[key]!r} in params.yaml but {values[key]!r} in .config "
                f"({len(stale)} option(s) differ): run `crsp-ops config sync` "
                "(or `make menuconfig`, which syncs on exit)"
            )
    for key, value in from_params.items():
        if value != values[key]:
            values[key] = value
            sources[key] = "params.yaml"


def _dotconfig_sha(root: Path) -> str | None:
    path = _project_file(root, ".config")
    return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None


def _project_file(root: Path, name: str) -> Path | None:
    """``root/name`` when ``root`` is a project (its own Kconfig) holding that file."""
    path = root / name
    return path if (root / "Kconfig").is_file() and path.is_file() else None


def _split_override(item: str, specs: dict[str, OptionSpec]) -> tuple[str, str]:
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep:
        raise ConfigError(f"--set {item!r}: expected section.key=value")
    if key not in specs:
        raise ConfigError(f"--set {item!r}: unknown option {key}{_suggest(key, specs)}")
    return key, raw


def _suggest(key: str, specs: dict[str, OptionSpec]) -> str:
    trl = trl_name_hint(key)
    if trl is not None:
        return f" ({trl})"
    close = difflib.get_close_matches(key, list(specs), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _typed(spec: OptionSpec, raw: Any, origin: str) -> Any:
    section, name = spec.key.split(".", 1)
    cls = SECTION_TYPES[section]
    field = next(f for f in fields(cls) if f.name == name)
    return parse_value(spec, get_type_hints(cls)[name], field.metadata, raw, origin)


def _build(values: dict[str, Any]) -> Settings:
    grouped: dict[str, dict[str, Any]] = {section: {} for section in SECTION_TYPES}
    for key, value in values.items():
        section, name = key.split(".", 1)
        grouped[section][name] = value
    try:
        return Settings(**{s: SECTION_TYPES[s](**kw) for s, kw in grouped.items()})
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None
