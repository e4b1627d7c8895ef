"""Every file, heading and module that the docs and docstrings name exists in this repository.

Scanned: the docstrings (module, class, function; read with `ast`) of `*.py` under `src/`,
`pipelines/`, `benchmarks/` and `lab/` (whichever exist when the test runs), and the markdown of
`README.md` and `docs/**/*.md`. A reference is a markdown link `[x](path#anchor)`, a repo path
(`src/crsp_ops/x.py`, `docs/x.md#anchor`, `benchmarks/foo.py`: the first part names a top-level
folder of the repository, or `crsp_ops/`, read under `src/`), a bare upper-case `NAME.md` (lower-case
ones name a run's outputs, such as `evolving_summary.md`), or a dotted module
path (`crsp_ops.crsp.api.train`, `pipelines.train`, or `crsp.rl.update` for the trainer package),
resolved import path to file and the first
name after the module checked against the module's top-level names. An anchor must be a heading
(GitHub's slug) or an `<a id=...>` of the target markdown.

Not references: URLs, placeholders (`<stage>`, `*`, `{name}`, `...`), dotted names the package's
code writes as strings (run tags such as `crsp.resume.schedule_change`), and paths under what a run
writes (the `.gitignore`d trees such as `models/`, `outputs/`, `data/`, and every `outs` of
`dvc.yaml`). Historical records keep the paths they ran with and are not scanned: the
`notebook/`, `claims/` and `results/` trees of `benchmarks/` (or of `lab/`, if they move there),
and the fenced commands of `docs/results.md`, which that page copies from those records.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PY_ROOTS = ("src", "pipelines", "benchmarks", "lab")
MD_FILES = ("README.md", "docs/**/*.md")
# Historical records: the paths they name are the ones their runs used.
RECORD_DIRS = ("notebook", "claims", "results")
RECORD_PARENTS = ("benchmarks", "lab")
# Top-level names a moved tree may still be referred by while a move is under way are NOT
# listed here on purpose: a path counts as a repo path when its first part exists at the root.
PACKAGE = "crsp_ops"
# Pages whose fenced blocks are recorded commands (the paths a run used, historical like the
# records themselves); their links and prose are still checked.
RECORDED_COMMANDS = {
    "docs/results.md": "generated from the lab's claims; each block is the command a claim ran",
}
# Names that are meant to no longer resolve, each with its reason.
FORMER_NAMES = {
    ("docs/own-repository.md", "pipelines.cli"): "the migration note names the module it replaced",
}
TEXT_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".toml", ".json", ".jsonl", ".txt", ".cfg", ".sh",
                 ".png", ".csv", ".lock", ".ipynb")

PATH_RE = re.compile(
    r"(?<![\w/.:@~$-])"  # not inside a URL, a longer path, an attribute or a variable
    r"((?:\./)?[A-Za-z_][\w.-]*(?:/[\w.-]+)+/?|[A-Z][A-Z0-9_-]*\.md)"
    r"(#[\w-]+)?"
)
# crsp_ops.x.y, pipelines.x, and crsp.x.y (the trainer package without its crsp_ops prefix; three
# parts at least, since crsp.seed and the like are settings, not modules).
DOTTED_RE = re.compile(
    r"(?<![\w./-])((?:crsp_ops|pipelines|crsp(?=(?:\.[A-Za-z_]\w*){2}))(?:\.[A-Za-z_]\w*)+)")
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
BACKTICK_RE = re.compile(r"(`+)(.+?)\1", re.S)
FENCE_RE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
PLACEHOLDER = re.compile(r"[<>*{}$…]|\.\.\.")


@dataclass(frozen=True)
class Ref:
    """One reference: the file that makes it, its line, and the text it names."""

    source: str
    line: int
    text: str


# ---------------------------------------------------------------- collecting references


def is_record(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    return len(parts) > 1 and parts[0] in RECORD_PARENTS and parts[1] in RECORD_DIRS


def python_files(root: Path) -> list[Path]:
    files = []
    for top in PY_ROOTS:
        files += [p for p in sorted((root / top).rglob("*.py")) if not is_record(p, root)]
    return files


def markdown_files(root: Path) -> list[Path]:
    files = []
    for pattern in MD_FILES:
        files += sorted(root.glob(pattern))
    return files


def docstrings(path: Path):
    """Yield (line, text) for the module's, each class's and each function's docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                yield first.lineno, first.value.value


def refs_in_text(text: str, source: str, line0: int):
    """Repo paths and dotted module paths named anywhere in a text (docstrings, code spans)."""
    for match in PATH_RE.finditer(text):
        line = line0 + text.count("\n", 0, match.start())
        yield Ref(source, line, match.group(1) + (match.group(2) or ""))
    for match in DOTTED_RE.finditer(text):
        line = line0 + text.count("\n", 0, match.start())
        yield Ref(source, line, match.group(1))


def refs_in_markdown(path: Path, root: Path):
    """Links, code spans and fenced blocks of one markdown file."""
    text = path.read_text(encoding="utf-8")
    source = str(path.relative_to(root))

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    for match in LINK_RE.finditer(text):
        target = match.group(1)
        if not re.match(r"[a-z][a-z+.-]*:", target):  # http:, mailto:, ...
            yield Ref(source, line_of(match.start()), "link:" + target)
    for match in FENCE_RE.finditer(text):
        if source not in RECORDED_COMMANDS:
            yield from refs_in_text(match.group(0), source, line_of(match.start()))
    prose = FENCE_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in BACKTICK_RE.finditer(prose):
        yield from refs_in_text(match.group(2), source, line_of(match.start()))


def all_refs(root: Path) -> list[Ref]:
    refs: list[Ref] = []
    for path in python_files(root):
        source = str(path.relative_to(root))
        for line, text in docstrings(path):
            refs += refs_in_text(text, source, line)
    for path in markdown_files(root):
        refs += refs_in_markdown(path, root)
    return refs


# ---------------------------------------------------------------- resolving them


def run_outputs(root: Path) -> list[str]:
    """Patterns of paths a run writes: the .gitignore entries and dvc.yaml's outs."""
    patterns = []
    gitignore = root / ".gitignore"
    if gitignore.exists():
        for line in gitignore.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                patterns.append(line.strip("/"))
    dvc = root / "dvc.yaml"
    if dvc.exists():
        for stage in (yaml.safe_load(dvc.read_text()) or {}).get("stages", {}).values():
            for out in stage.get("outs", []) + stage.get("metrics", []) + stage.get("plots", []):
                patterns.append((next(iter(out)) if isinstance(out, dict) else out).strip("/"))
    return patterns


def is_run_output(path: str, patterns: list[str]) -> bool:
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatch(prefix, pattern) for prefix in prefixes for pattern in patterns)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    text = FENCE_RE.sub("", path.read_text(encoding="utf-8"))
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found | set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))


def top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def string_names(root: Path) -> set[str]:
    """Dotted names the package's code writes as string literals: tags and keys, not modules."""
    names: set[str] = set()
    for path in (root / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"crsp(?:\.\w+){2,}", node.value):
                names.add(node.value)
    return names


class Resolver:
    """Decides whether one reference names something that exists."""

    def __init__(self, root: Path):
        self.root = root
        self.top = {p.name for p in root.iterdir() if not p.name.startswith(".git")}
        self.outputs = run_outputs(root)
        self.names = string_names(root)

    def problem(self, ref: Ref) -> str | None:
        """None when the reference resolves, else why it does not."""
        text = ref.text
        if PLACEHOLDER.search(text):
            return None
        if text.startswith("link:"):
            return self.link(ref, text[len("link:"):])
        if "/" not in text and not text.partition("#")[0].endswith(".md"):
            return self.dotted(text)
        return self.path(ref, text)

    def link(self, ref: Ref, target: str) -> str | None:
        path, _, anchor = target.partition("#")
        here = self.root / ref.source
        file = (here.parent / path).resolve() if path else here
        if not file.exists():
            return "no such file"
        return self.anchor(file, anchor)

    def path(self, ref: Ref, text: str) -> str | None:
        path, _, anchor = text.partition("#")
        path = path.removeprefix("./").rstrip("/.")
        if re.search(r"\.\w+$", path) is None and path.count("/") == 0:
            return None
        first = path.split("/")[0]
        if "/" in path and first not in self.top and first != PACKAGE:
            return None  # another project's path (trl/..., nanochat/...), or prose (and/or)
        if "/" in path and (self.root / first).is_file():
            return None  # alternatives written with slashes: Kconfig/.config/params.yaml
        if "/" not in path and not path.endswith(".md"):
            return None
        if is_run_output(path, self.outputs):
            return None
        here = (self.root / ref.source).parent
        for candidate in (self.root / path, here / path, self.root / "src" / path,
                          self.root / "docs" / path):
            if candidate.exists():
                return self.anchor(candidate, anchor)
        return "no such file"

    def anchor(self, file: Path, anchor: str) -> str | None:
        if not anchor or file.suffix != ".md":
            return None
        return None if anchor in anchors(file) else f"no heading #{anchor} in {file.name}"

    def dotted(self, text: str) -> str | None:
        if text in self.names:
            return None  # a run tag or key the code spells as a string (crsp.resume.schedule_change)
        parts = text.split(".")
        if parts[0] == "crsp":
            parts = [PACKAGE, *parts]
        base = self.root / "src" if parts[0] == PACKAGE else self.root
        module, i = None, 0
        for i in range(len(parts), 0, -1):
            stem = base.joinpath(*parts[:i])
            if stem.with_suffix(".py").is_file():
                module = stem.with_suffix(".py")
                break
            if (stem / "__init__.py").is_file():
                module = stem / "__init__.py"
                break
        if module is None:
            return "no such module"
        rest = parts[i:]
        if rest and rest[0] not in top_level_names(module) and rest[0] not in TEXT_SUFFIXES_NAMES:
            return f"{'.'.join(parts[:i])} has no {rest[0]}"
        return None


TEXT_SUFFIXES_NAMES = {s.lstrip(".") for s in TEXT_SUFFIXES}


def broken(root: Path) -> list[str]:
    resolver = Resolver(root)
    out = []
    for ref in all_refs(root):
        if (ref.source, ref.text) in FORMER_NAMES:
            continue
        why = resolver.problem(ref)
        if why:
            out.append(f"{ref.source}:{ref.line}: {ref.text.removeprefix('link:')} ({why})")
    return sorted(set(out))


# ---------------------------------------------------------------- tests


def test_every_reference_resolves():
    problems = broken(ROOT)
    assert not problems, "references that name nothing in this repository:\n" + "\n".join(problems)


def copy_scanned(tmp_path: Path) -> Path:
    """A copy of what the check reads (not the large record trees) to plant breakage in."""
    for name in ("src", "pipelines", "benchmarks", "lab", "docs"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tmp_path / name,
                            ignore=shutil.ignore_patterns(*RECORD_DIRS, "__pycache__", "*.png"))
    for name in ("README.md", ".gitignore", "dvc.yaml"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, tmp_path / name)
    for name in ROOT.iterdir():  # the other top-level names, so paths into them count
        if not (tmp_path / name.name).exists() and not name.name.startswith(".git"):
            (tmp_path / name.name).touch() if name.is_file() else (tmp_path / name.name).mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("file", "planted", "expected"),
    [
        ("src/crsp_ops/paths.py", "Design: docs/no_such_page.md.", "docs/no_such_page.md"),
        ("src/crsp_ops/paths.py", "See docs/training.md#no-such-heading.",
         "no heading #no-such-heading"),
        ("src/crsp_ops/paths.py", "See ENGINES.md implication 7.", "ENGINES.md"),
        ("src/crsp_ops/paths.py", "Uses crsp_ops.crsp.episode.solve.", "crsp_ops.crsp.episode.solve"),
        ("src/crsp_ops/paths.py", "Calls crsp_ops.crsp.api.no_such_name.", "has no no_such_name"),
        ("src/crsp_ops/paths.py", "Runs ``crsp.episode.solve``.", "crsp.episode.solve"),
        ("docs/training.md", "[gone](architecture.md#no-such-heading)", "no-such-heading"),
        ("docs/training.md", "[gone](design/no_such_page.md)", "design/no_such_page.md"),
        ("docs/training.md", "Run `benchmarks/no_such_tool.py`.", "benchmarks/no_such_tool.py"),
    ],
)
def test_a_planted_broken_reference_fails(tmp_path, file, planted, expected):
    root = copy_scanned(tmp_path)

    def planted_here() -> bool:
        return any(p.startswith(file + ":") and expected in p for p in broken(root))

    assert not planted_here()
    target = root / file
    text = target.read_text()
    if target.suffix == ".py":
        text = text.replace('"""', '"""' + planted + "\n\n", 1)
    else:
        text += "\n" + planted + "\n"
    target.write_text(text)
    assert planted_here()


@pytest.mark.parametrize(
    "fine",
    [
        "models/crsp",  # a run's output (gitignored)
        "outputs/deltas/deltas_initial.json",
        "data/limo",
        "https://github.com/huggingface/trl/blob/main/trl/trainer/grpo_trainer.py",
        "trl/trainer/grpo_config.py",  # another project's file
        "docs/<topic>.md",  # a placeholder
        "and/or",
        "src/crsp_ops/paths.py",
        "docs/training.md#resume-extend-epochs-callbacks",
        "crsp_ops.crsp.api",
        "crsp.rl.advantages.baseline_group",  # the trainer package, prefix left out
        "crsp.seed and crsp.math_source",  # settings
        "the run tag crsp.resume.schedule_change",  # a tag the code spells as a string
    ],
)
def test_prose_urls_and_outputs_are_not_flagged(tmp_path, fine):
    root = copy_scanned(tmp_path)
    target = root / "src/crsp_ops/paths.py"
    target.write_text(target.read_text().replace('"""', '"""' + fine + "\n\n", 1))
    assert [p for p in broken(root) if p.startswith("src/crsp_ops/paths.py")] == []
