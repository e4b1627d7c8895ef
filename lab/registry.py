"""The claims registry and the lab's records it reads: paths, entries (``Claim``), the
notebook's sections, the declarations and their outcomes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from benchmarks.provenance import added, committed_at, sha256_at
from lab.quoted_numbers import matches, signed, source_numbers

REPO = Path(__file__).resolve().parents[1]
REGISTRY = Path("lab/claims/numbers.jsonl")
TABLE = Path("lab/CLAIMS.md")
RESULTS = Path("lab/notebook/RESULTS.md")
CLAIMS_DIR = Path("lab/claims")
OUTCOMES = CLAIMS_DIR / "outcomes.jsonl"
SPLITS = ("test", "dev", "in-sample", "first-sight", "measurement", "unsourced")
NOT_A_CLAIM = "not a claim: "


@dataclass(frozen=True)
class Claim:
    """One registry line, with what its sources say."""

    files: tuple[str, ...]
    numbers: tuple[str, ...]
    split: str
    what: str
    sources: tuple[str, ...]
    command: str
    date: str
    commit: str
    claim: str = ""  # the declared claim a test entry's numbers come from
    line: int = 0  # its line in the registry
    quotes: tuple[tuple[str, str, str], ...] = ()  # (file, anchor, number): each quote's place
    settings: tuple[tuple[str, str, str], ...] = ()  # (anchor, number, target): lab/settings_values


def sections(results: str) -> dict[str, tuple[str, str]]:
    """Notebook ``### `` sections: title → (text, date of the ``## `` heading above it).

    A one-word ``### `` heading (an arm's table, ``### offline``) stays in the section above it.
    """
    out, date, title, lines = {}, "", None, []
    for line in results.splitlines() + ["## "]:
        if line.startswith("### ") and " " not in line[4:].strip() and title is not None:
            lines.append(line)  # "### offline": an arm's table inside its run's section
            continue
        if line.startswith("## ") or line.startswith("### "):
            if title is not None:
                out.setdefault(title, ("\n".join(lines), date))
            title, lines = (line[4:].strip(), []) if line.startswith("### ") else (None, [])
            found = re.search(r"\d{4}-\d{2}-\d{2}", line) if line.startswith("## ") else None
            date = found.group(0) if found else date
        elif title is not None:
            lines.append(line)
    return out


def _command(text: str) -> str:
    """The first benchmark command of a section."""
    for line in text.splitlines():
        found = re.search(r"((?:for |\.venv/bin/)?python[^`]*benchmarks[/.][^`]*)", line)
        if found:
            return found.group(1).strip().rstrip("\\").strip()
    return ""


def outcomes(root: Path = REPO) -> dict[str, dict]:
    """``lab/claims/outcomes.jsonl``: claim name → its outcome record (empty if none)."""
    path = root / OUTCOMES
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return {row["claim"]: row for row in rows}


def declared(root: Path = REPO) -> list[str]:
    """Every declared claim: the ``lab/claims/*.md`` declarations, then the attempts
    ``outcomes.jsonl`` records that were declared elsewhere (``declared_in``)."""
    names = sorted(p.stem for p in (root / CLAIMS_DIR).glob("*.md"))
    return names + sorted(n for n, row in outcomes(root).items()
                          if row.get("declared_in") and n not in names)


def load_claims(root: Path = REPO) -> list[Claim]:
    """The registry, each claim completed from its sources.

    Raises:
        ValueError: a malformed line, an unknown split or claim, a missing source or section,
            or a number no source holds.
    """
    results = sections((root / RESULTS).read_text(encoding="utf-8"))
    names = set(declared(root))
    claims = []
    for number, line in enumerate((root / REGISTRY).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{REGISTRY}:{number}"
        try:
            raw = json.loads(line)
            files = tuple(raw["files"])
            numbers = tuple(signed(str(n)) for n in raw["numbers"])
            split, what = raw["split"], raw["what"]
            sources = [tuple(item) for item in raw.get("sources", [])]
            places = tuple((f, a, signed(str(n))) for f, a, n in raw.get("quotes", []))
            bound = tuple((a, signed(str(n)), t) for a, n, t in raw.get("settings", []))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{where}: {error!r}; see lab/claims_table.py") from error
        if split not in SPLITS and not split.startswith(NOT_A_CLAIM):
            raise ValueError(f"{where}: split {split!r}: use one of {SPLITS} or "
                             f"'{NOT_A_CLAIM}<why>'")
        if not sources and split != "unsourced" and not split.startswith(NOT_A_CLAIM):
            raise ValueError(f"{where}: a {split} claim needs its sources")
        claim = raw.get("claim", "")
        stray = [q for q in places if q[0] not in files or q[2] not in numbers]
        if stray:
            raise ValueError(f"{where}: quotes {stray} name a file or number the entry does not "
                             "list")
        if split == "test" and claim not in names:
            raise ValueError(f"{where}: a test entry names its declared claim (\"claim\": one "
                             f"of {sorted(names)}), not {claim!r}")
        command, date, commit = raw.get("command", ""), raw.get("date", ""), raw.get("commit", "")
        available: set[str] = set()
        for source, *title in sources:
            if not (root / source).is_file():
                raise ValueError(f"{where}: source {source!r} is not a file of the repository")
            text = (root / source).read_text(encoding="utf-8")
            if title and title[0]:
                if source != str(RESULTS) or title[0] not in results:
                    raise ValueError(f"{where}: no '### {title[0]}' in {RESULTS}")
                text, section_date = results[title[0]]
                found = re.search(r"(?<![0-9a-f])[0-9a-f]{7}(?![0-9a-f])", text)
                command = command or _command(text)
                date = date or section_date
                commit = commit or (found.group(0) if found else "")
            available |= source_numbers(text, json_file=source.endswith((".json", ".jsonl")))
        wrong = [n for n in numbers if sources and not matches(n, available)]
        if wrong:
            raise ValueError(f"{where}: {wrong} not found in its sources (as written or "
                             "rounded, with its sign)")
        names_ = tuple(f"{src} § {t[0]}" if t and t[0] else src for src, *t in sources)
        claims.append(Claim(files, numbers, split, what, names_, command, date, commit, claim,
                            number, places, bound))
    return claims



def declaration(name: str, root: Path = REPO) -> dict:
    """What a claim's declaration says of its test data: ``{"commit", "time", "question",
    "test_files": {path: sha256}}``. A declaration names its question on a ``Question:`` line
    and each test file as ``- `path` sha256 `hex` `` (the hash checked against the file at
    the declaration's commit); an attempt declared before that form gives ``question`` and
    ``test_files`` (paths, hashed at its commit) in ``outcomes.jsonl``.

    Raises:
        ValueError: a named hash that is not the file's at the declaration commit.
    """
    note, md = outcomes(root).get(name, {}), root / CLAIMS_DIR / f"{name}.md"
    text = md.read_text(encoding="utf-8") if md.is_file() else ""
    commit, _, time = added(md.relative_to(root), root) if text else (
        note.get("declared_commit", ""), "", committed_at(note.get("declared_commit", ""), root))
    found = re.search(r"^Question: (.+)$", text, re.M)
    named = dict(re.findall(r"^- `([^`]+)` sha256 `([0-9a-f]{64})`", text, re.M))
    files = named or {p: sha256_at(commit, p, root) if commit else ""
                      for p in note.get("test_files", [])}
    for path, digest in named.items():
        at = sha256_at(commit, path, root) if commit else ""
        if at and at != digest:
            raise ValueError(f"{md.relative_to(root)} names {path} by sha256 {digest[:12]}…, "
                             f"but at its commit {commit} the file hashes {at[:12]}…")
    return {"commit": commit, "time": time, "test_files": files,
            "question": found.group(1).strip() if found else note.get("question", "")}


def relooks(root: Path = REPO) -> dict[str, list[str]]:
    """Claim → the earlier declared claims that asked its question on the same test files
    (by hash): a non-empty list makes it a re-look, never a headline. Claims without test
    files named are nobody's re-look."""
    seen: dict[tuple, list[str]] = {}
    out = {}
    rows = [(declaration(n, root), n) for n in declared(root)]
    for info, name in sorted(rows, key=lambda r: (r[0]["time"] or "9", r[1])):
        files = info["test_files"]
        if not files or not info["question"] or not all(files.values()):
            out[name] = []
            continue
        key = (info["question"], tuple(sorted(files.items())))
        out[name] = list(seen.get(key, []))
        seen.setdefault(key, []).append(name)
    return out


def pages(root: Path = REPO) -> list[Path]:
    """The pages whose numbers the registry ties: README.md, docs/*.md (but the generated
    docs/results.md), the design notes docs/design/*.md and examples/*/README.md."""
    docs = [p for p in sorted((root / "docs").glob("*.md")) if p.name != "results.md"]
    return [root / "README.md", *docs, *sorted((root / "docs" / "design").glob("*.md")),
            *sorted((root / "examples").glob("*/README.md"))]
