"""References between files that a migration must keep consistent, and how to resolve them.

Each kind is extracted in document order from one file's text and resolved against a whole
tree: Python imports, ``python -m`` module paths, Hydra config names, YAML ``${...}``
interpolations, dotted CLI overrides in shell scripts, and relative paths (Markdown links,
script arguments, ``config_path`` values).
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath

import yaml

from crsp_ops.migrate.rewrite import line_locator

IMPORT = "import"
MODULE_RUN = "python -m"
CONFIG_NAME = "hydra config name"
INTERPOLATION = "yaml interpolation"
OVERRIDE = "cli override"
PATH = "path"

_MODULE_RUN = re.compile(r"\bpython[0-9.]*\s+(?:-[A-Za-z]+\s+)*-m\s+([A-Za-z_][\w.]*\w)")
_CONFIG_NAME = re.compile(
    r"""\bconfig_name\s*[=:]\s*['"]([\w./-]+)['"]|(?:--config-name|\s-cn)[=\s]+['"]?([\w./-]+)"""
)
_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][\w-]*(?:\.[\w-]+)*)\}")
_OVERRIDE = re.compile(r"(?:(?<=\s)|^)(?:\+\+|\+|~)?([A-Za-z_][\w-]*(?:\.[\w-]+)+)=", re.MULTILINE)
_PATH = re.compile(r"(?<![\w./~$@:-])((?:\.{1,2}/)?[\w.-]+(?:/[\w.-]+)+/?)")
_SHELL_SUFFIXES = (".sh", ".bash", ".zsh")
_YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Reference:
    """One reference from a file to something that must exist in the tree."""

    kind: str
    target: str  # what is referenced, as written (module, config name, key path, path)
    source: str  # the referencing file
    line: int
    level: int = 0  # relative-import level (``from ..x import y`` has level 2)


@dataclass(frozen=True)
class TreeState:
    """A tree's files and texts, before or after a migration, for resolving references."""

    files: frozenset[str]
    texts: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def dirs(self) -> frozenset[str]:
        """Every directory holding a file, as POSIX paths relative to the root."""
        return frozenset(
            "/".join(path.split("/")[:depth])
            for path in self.files
            for depth in range(1, path.count("/") + 1)
        )

    @cached_property
    def import_roots(self) -> tuple[str, ...]:
        """Directories absolute imports are resolved from: the root, ``src/`` and projects."""
        roots = {""}
        for path in self.files:
            directory, _, name = path.rpartition("/")
            if name in ("setup.py", "pyproject.toml", "setup.cfg"):
                roots.add(directory)
        roots |= {f"{root}/src".lstrip("/") for root in list(roots) if
                  f"{root}/src".lstrip("/") in self.dirs}
        return tuple(sorted(roots))

    @cached_property
    def yaml_documents(self) -> tuple[object, ...]:
        """Every parsable YAML document of the tree."""
        documents = []
        for path, text in self.texts.items():
            if path.endswith(_YAML_SUFFIXES):
                try:
                    documents += [doc for doc in yaml.safe_load_all(text) if doc is not None]
                except yaml.YAMLError:
                    continue
        return tuple(documents)

    def exists(self, path: str) -> bool:
        """Whether ``path`` names a file or directory of the tree."""
        return path in self.files or path in self.dirs or path == ""


def extract(path: str, text: str) -> list[Reference]:
    """All references made by file ``path``, in document order within each kind."""
    references = []
    if path.endswith(".py"):
        references += _imports(path, text)
    for kind, pattern in ((MODULE_RUN, _MODULE_RUN), (CONFIG_NAME, _CONFIG_NAME)):
        references += _matches(kind, pattern, path, text)
    if path.endswith(_YAML_SUFFIXES):
        references += _matches(INTERPOLATION, _INTERPOLATION, path, text)
    if path.endswith(_SHELL_SUFFIXES) or text.startswith(("#!/bin/bash", "#!/bin/sh",
                                                           "#!/usr/bin/env bash")):
        references += _matches(OVERRIDE, _OVERRIDE, path, text)
    references += _matches(PATH, _PATH, path, text)
    return references


def resolves(reference: Reference, tree: TreeState) -> bool:
    """Whether ``reference`` points at something that exists in ``tree``."""
    if reference.kind == IMPORT:
        return _module_exists(reference, tree)
    if reference.kind == MODULE_RUN:
        return _module_exists(Reference(IMPORT, reference.target, reference.source, 0), tree)
    if reference.kind == CONFIG_NAME:
        wanted = reference.target.removesuffix(".yaml") + ".yaml"
        return any(path == wanted or path.endswith("/" + wanted) for path in tree.files)
    if reference.kind in (INTERPOLATION, OVERRIDE):
        keys = reference.target.split(".")
        return any(_has_key_path(document, keys) for document in tree.yaml_documents)
    return _path_exists(reference, tree)


def _imports(path: str, text: str) -> list[Reference]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are not our concern here
            tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return []
    references = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            references += [Reference(IMPORT, alias.name, path, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            references.append(Reference(IMPORT, module, path, node.lineno, level=node.level))
            # ``from pkg import mod`` may import a module: checked only where it resolved before.
            references += [
                Reference(IMPORT, f"{module}.{alias.name}".lstrip("."), path, node.lineno,
                          level=node.level)
                for alias in node.names
                if alias.name != "*"
            ]
    return sorted(references, key=lambda reference: reference.line)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included.

    Imports are statements, so expressions are never visited: an order of magnitude fewer
    nodes than ``ast.walk``.
    """
    for statement in body:
        yield statement
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            nested = getattr(statement, name, None)
            if isinstance(nested, list):
                yield from _statements(nested)


def _matches(kind: str, pattern: re.Pattern[str], path: str, text: str) -> Iterator[Reference]:
    locate = None
    for match in pattern.finditer(text):
        locate = locate or line_locator(text)
        target = next(group for group in match.groups() if group is not None)
        yield Reference(kind, target, path, locate(match.start())[0])


def _module_exists(reference: Reference, tree: TreeState) -> bool:
    parts = [part for part in reference.target.split(".") if part]
    if reference.level:
        base = PurePosixPath(reference.source).parent
        for _ in range(reference.level - 1):
            base = base.parent
        bases = [base.as_posix() if str(base) != "." else ""]
    else:
        bases = list(tree.import_roots)
    for base in bases:
        stem = "/".join(([base] if base else []) + parts)
        if f"{stem}.py" in tree.files or f"{stem}.pyi" in tree.files or (stem and stem in
                                                                              tree.dirs):
            return True
        if not parts and reference.level:
            return True  # ``from . import x``: the package itself
    return False


def _has_key_path(document: object, keys: list[str]) -> bool:
    node = document
    for key in keys:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return False
    return True


def _path_exists(reference: Reference, tree: TreeState) -> bool:
    target = reference.target.rstrip("/")
    here = PurePosixPath(reference.source).parent
    for candidate in (PurePosixPath(target), here / target):
        normalised = _normalise(candidate)
        if normalised is not None and normalised != "" and tree.exists(normalised):
            return True
    return False


def _normalise(path: PurePosixPath) -> str | None:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)
