"""The project's import graph, read from source with ``ast``: every import, function-level too.

Two users: the layer test (no package cycle, no import that climbs ``LAYERS``) and
``python -m tools.dvc_deps`` (a stage's code deps are the files its driver's imports reach).

Module names map to files under the project root: ``crsp_ops.*`` in ``src/``, ``pipelines.*``
(the stage scripts) at the top level. Only project modules are followed; third-party imports
are ignored.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The declared layers, lowest first. A package may import its own layer (without a cycle) and
# any layer below, never one above. Keep in sync with the picture in docs/architecture.md.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("crsp_ops.atomic_io", "crsp_ops.errors", "crsp_ops.paths", "crsp_ops.interrupts",
     "crsp_ops.dir_lock",
     "crsp_ops.openai_client"),
    ("crsp_ops.config",),
    ("crsp_ops.data", "crsp_ops.tracking", "crsp_ops.steering", "crsp_ops.evaluation"),
    ("crsp_ops.models",),
    ("crsp_ops.inference",),
    ("crsp_ops.evolve", "crsp_ops.crsp", "crsp_ops.migrate"),
    ("crsp_ops.cli",),
    ("pipelines",),
)

# The layers inside the trainer package, lowest first (docs/architecture.md): the same rule.
CRSP_LAYERS: tuple[tuple[str, ...], ...] = (
    ("crsp_ops.crsp.policy", "crsp_ops.crsp.executor"),
    ("crsp_ops.crsp.rl", "crsp_ops.crsp.tasks"),
    ("crsp_ops.crsp.rewards",),
    ("crsp_ops.crsp.selfplay",),
    ("crsp_ops.crsp.trainer",),
    ("crsp_ops.crsp.user_task",),
    ("crsp_ops.crsp.api",),
)

SOURCE_ROOTS = {"crsp_ops": Path("src"), "pipelines": Path(".")}


@dataclass(frozen=True)
class Import:
    """One import statement's target, as written in ``source`` (a module name)."""

    source: str  # importing module
    target: str  # imported project module
    line: int
    in_function: bool  # written inside a def (still counted: it runs when the def runs)


def module_files(root: Path) -> dict[str, Path]:
    """``{module name: file}`` for every project module under ``root``."""
    modules: dict[str, Path] = {}
    for top, base in SOURCE_ROOTS.items():
        package_dir = root / base / top
        for path in sorted(package_dir.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(root / base).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def imports_of(name: str, path: Path, known: Iterable[str]) -> Iterator[Import]:
    """The project modules ``name`` (at ``path``) imports, resolved against ``known``."""
    known = set(known)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node, in_function in _walk(tree, False):
        for target in _targets(node, package):
            # `from a.b import c` names module a.b.c when c is a submodule, else a symbol of a.b
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield Import(name, target, node.lineno, in_function)


def _walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield from _walk(child, inner)


def _targets(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if _is_project(alias.name)]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    if not _is_project(module):
        return []
    return [f"{module}.{alias.name}" for alias in node.names] + [module]


def _is_project(module: str) -> bool:
    return module.split(".")[0] in SOURCE_ROOTS


def build_graph(root: Path) -> tuple[dict[str, Path], list[Import]]:
    """Every project module and every import between them."""
    modules = module_files(root)
    # the package root's lazy public face (``crsp_ops.CRSPTrainer``) runs only when asked for
    edges = [imp for name, path in modules.items() for imp in imports_of(name, path, modules)
             if not (name == "crsp_ops" and imp.in_function)]
    return modules, edges


def with_parents(name: str) -> list[str]:
    """A module and the packages whose ``__init__`` runs when it is imported.

    >>> with_parents("crsp_ops.steering.bias")
    ['crsp_ops', 'crsp_ops.steering', 'crsp_ops.steering.bias']
    """
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def reachable(start: str, modules: dict[str, Path], edges: list[Import]) -> set[str]:
    """Every project module that runs when ``start`` runs (its imports, transitively)."""
    out_edges: dict[str, set[str]] = {}
    for imp in edges:
        out_edges.setdefault(imp.source, set()).update(with_parents(imp.target))
    seen: set[str] = set()
    todo = [m for m in with_parents(start) if m in modules]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(m for m in out_edges.get(module, ()) if m in modules and m not in seen)
    return seen


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS
             ) -> tuple[int, str] | None:
    """``(layer index, unit)`` of a module: the unit is the package or module named in layers."""
    for index, units in enumerate(layers):
        for unit in units:
            if module == unit or module.startswith(unit + "."):
                return index, unit
    return None


def upward_imports(edges: list[Import], layers: tuple[tuple[str, ...], ...] = LAYERS,
                   within: str = "") -> list[Import]:
    """Imports whose target sits in a higher layer than their source, or in no layer.

    ``within`` (a package) restricts the check to imports between its own modules.
    """
    bad = []
    for imp in edges:
        if imp.target in ("crsp_ops", within):  # package __init__s hold no imports
            continue
        if within and not (imp.source.startswith(within + ".")
                           and imp.target.startswith(within + ".")):
            continue
        source, target = layer_of(imp.source, layers), layer_of(imp.target, layers)
        if source is None or target is None or target[0] > source[0]:
            bad.append(imp)
    return bad


def unit_cycles(edges: list[Import], layers: tuple[tuple[str, ...], ...] = LAYERS
                ) -> list[list[str]]:
    """Cycles between layer units (packages), as lists of unit names; empty when acyclic."""
    graph: dict[str, set[str]] = {}
    for imp in edges:
        source, target = layer_of(imp.source, layers), layer_of(imp.target, layers)
        if source and target and source[1] != target[1]:
            graph.setdefault(source[1], set()).add(target[1])
    return _strongly_connected(graph)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm; only components of more than one node are returned."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components
