"""Static check of proposed programs: banned imports, calls and escape-hatch attributes.

This is the first of three layers (AST check here, a runtime audit hook and rlimits in the
child, process isolation in ``sandbox``). It rejects what a task program never needs: process,
file-system, network and interpreter-introspection access. It parses the source with ``ast``
and never executes it.
"""

from __future__ import annotations

import ast

BANNED_MODULES = frozenset({
    "os", "sys", "subprocess", "socket", "shutil", "ctypes", "multiprocessing", "threading",
    "_thread", "signal", "resource", "io", "importlib", "builtins", "pickle", "marshal",
    "shelve", "tempfile", "glob", "fcntl", "pty", "select", "selectors", "asyncio", "http",
    "urllib", "ftplib", "smtplib", "telnetlib", "ssl", "code", "codeop", "inspect", "gc",
    "mmap", "sysconfig", "platform", "pdb", "webbrowser", "concurrent", "atexit",
    "faulthandler", "posix", "pwd", "grp", "zipimport", "runpy", "pathlib", "fileinput",
    "zipfile", "tarfile", "sqlite3", "dbm", "gzip", "bz2", "lzma", "logging", "site", "trace",
    "tracemalloc", "pkgutil", "types", "posixpath", "ntpath", "_posixsubprocess", "_io",
    "_socket", "_ctypes", "winreg", "msvcrt",
})
"""Top-level modules a task program may not import."""

BANNED_NAMES = frozenset({
    "eval", "exec", "compile", "__import__", "__builtins__", "input", "breakpoint", "globals",
    "locals", "vars", "getattr", "setattr", "delattr", "exit", "quit", "help", "__loader__",
    "__spec__",
})
"""Builtins a program may not reference at all (calling or aliasing them)."""

ALLOWED_DUNDER_ATTRIBUTES = frozenset({
    "__init__", "__name__", "__doc__", "__len__", "__iter__", "__next__", "__eq__", "__ne__",
    "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__repr__", "__str__", "__add__",
    "__sub__", "__mul__", "__contains__", "__getitem__", "__setitem__", "__class__",
    "__qualname__", "__bool__",
})
"""Dunder attributes with no route to frames, globals or ``object.__subclasses__``."""

_BANNED_ATTRIBUTES = frozenset({
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "gi_code",
    "cr_frame", "cr_code", "ag_frame", "tb_frame", "tb_next", "co_code",
})
_READ_MODES = frozenset({"r", "rt", "rb", "tr", "br"})


def find_violations(source: str) -> list[str]:
    r"""List every banned construct in ``source``.

    Args:
        source: Python source code of a proposed program.

    Returns:
        Human-readable violations (empty when the program passes).

    Raises:
        SyntaxError: if ``source`` does not parse.

    >>> find_violations("import os\ndef f(x):\n    return x")
    ["import of banned module 'os' (line 1)"]
    >>> find_violations("def f(x):\n    return sorted(x)")
    []
    """
    tree = ast.parse(source)
    violations: list[str] = []
    read_only_open_calls = {
        id(node.func) for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == "open" and _is_read_only_open(node)
    }
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _top_module(alias.name) in BANNED_MODULES:
                    violations.append(f"import of banned module {alias.name!r} (line {line})")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                violations.append(f"relative import (line {line})")
            elif _top_module(node.module or "") in BANNED_MODULES:
                violations.append(f"import of banned module {node.module!r} (line {line})")
        elif isinstance(node, ast.Name):
            if node.id in BANNED_NAMES:
                violations.append(f"use of banned builtin {node.id!r} (line {line})")
            elif node.id == "open" and id(node) not in read_only_open_calls:
                violations.append(f"open() for writing or with a computed mode (line {line})")
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            dunder = attr.startswith("__") and attr.endswith("__")
            if (dunder and attr not in ALLOWED_DUNDER_ATTRIBUTES) or attr in _BANNED_ATTRIBUTES:
                violations.append(f"access to attribute {attr!r} (line {line})")
    return violations


def _top_module(name: str) -> str:
    return name.split(".", 1)[0]


def _is_read_only_open(call: ast.Call) -> bool:
    """True when ``open(...)`` has no mode or a constant read mode."""
    mode_node = call.args[1] if len(call.args) > 1 else None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            mode_node = keyword.value
        elif keyword.arg is None:  # open(path, **kwargs): mode unknown
            return False
    if mode_node is None:
        return True
    return isinstance(mode_node, ast.Constant) and mode_node.value in _READ_MODES
