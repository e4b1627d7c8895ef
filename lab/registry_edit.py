"""Edits of the registry: suggest, add, re-tie and prune entries."""

from __future__ import annotations

import json
from pathlib import Path

from lab.places import accepts, check_places, quoted
from lab.quoted_numbers import SOURCE_NUMBER, matches, signed
from lab.registry import REGISTRY, REPO, RESULTS, TABLE, Claim, load_claims, sections


def suggest(file: str, claims: list[Claim], root: Path = REPO) -> str:
    """For each unregistered number of ``file``, the notebook sections that hold it."""
    results = sections((root / RESULTS).read_text(encoding="utf-8"))
    found = {title: set(SOURCE_NUMBER.findall(text)) for title, (text, _) in results.items()}
    out = []
    for path, line, number, label, _ in quoted(root):
        if path != file or any(path in c.files and number in c.numbers and accepts(c, label)
                               for c in claims):
            continue
        hits = [title for title, nums in found.items() if matches(number, nums)]
        out.append(f"{path}:{line}: {number}{' (' + label + ')' if label else ''}: "
                   + (" | ".join(hits[:4]) or "no section"))
    return "\n".join(out)


def _write_registry(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def add_entry(file: str, split: str, what: str, sources: list[list[str]],
              numbers: list[str] | None, root: Path = REPO, claim: str = "") -> dict:
    """Append a registry line for ``file``'s missing numbers (or ``numbers``); the line.

    Raises:
        ValueError: nothing to add, or (through ``load_claims``) a number no source holds; the
            registry is left as it was.
    """
    claims = load_claims(root)
    label = claim if split == "test" else ""
    left = {c.line: list(c.quotes) for c in claims}
    places = []  # the file's quotes no entry holds at their place, under this label
    for f, _, n, mark, place in quoted(root):
        hit = next((c for c in claims if (f, place, n) in left[c.line] and accepts(c, mark)),
                   None)
        if hit:
            left[hit.line].remove((f, place, n))
        elif f == file and mark == label:
            places.append([f, place, n])
    wanted = sorted({q[2] for q in places} if numbers is None else
                    {signed(n) for n in numbers})
    if not wanted:
        raise ValueError(f"{file} has no number missing from {TABLE}")
    line = {"files": [file], "numbers": wanted, "split": split,
            **({"claim": claim} if claim else {}), "what": what,
            **({"sources": sources} if sources else {}),
            "quotes": [q for q in places if q[2] in wanted]}
    path = root / REGISTRY
    before = path.read_text(encoding="utf-8")
    path.write_text(before + json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        load_claims(root)
    except ValueError:
        path.write_text(before, encoding="utf-8")
        raise
    return line


def tie(file: str, root: Path = REPO) -> int:
    """Re-tie ``file``'s quotes whose words around them changed: each quote no entry lists at
    its place takes over a registered quote of the same number, file and accepting entry that
    its place no longer holds. A changed number is never re-tied (its entry must list it);
    how many were re-tied."""
    claims = load_claims(root)
    left = {c.line: list(c.quotes) for c in claims}
    loose = []
    for f, _, number, label, place in quoted(root):
        taking = [c for c in claims if f in c.files and number in c.numbers
                  and accepts(c, label)]
        hit = next((c for c in taking if (f, place, number) in left[c.line]), None)
        if hit:
            left[hit.line].remove((f, place, number))
        elif f == file:
            loose.append((number, place, taking))
    moves = {}  # registry line -> [(old quote, new quote)]
    for number, place, taking in loose:
        for c in taking:
            stale = next((q for q in left[c.line] if q[0] == file and q[2] == number), None)
            if stale:
                left[c.line].remove(stale)
                moves.setdefault(c.line, []).append((list(stale), [file, place, number]))
                break
    path, rows = root / REGISTRY, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        for old, new in moves.get(number, []):
            quotes = [[f, a, signed(str(n))] for f, a, n in raw["quotes"]]
            raw["quotes"][quotes.index(old)] = new
            for binding in raw.get("settings", []):  # its setting binding follows the quote
                if [binding[0], signed(str(binding[1]))] == old[1:]:
                    binding[0] = new[1]
        rows.append(raw)
    _write_registry(path, rows)
    return sum(len(v) for v in moves.values())


def prune(root: Path = REPO) -> int:
    """Drop every registered number no page quotes now (and entries left empty); how many."""
    claims = load_claims(root)
    _, used, left = check_places(claims, root)
    path = root / REGISTRY
    rows, dropped = [], 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        kept = [n for n in raw["numbers"] if (number, signed(str(n))) in used]
        dropped += len(raw["numbers"]) - len(kept)
        quotes = [q for q in raw.get("quotes", [])]
        for stale in left.get(number, []):
            quotes.remove(next(q for q in quotes if (q[0], q[1], signed(str(q[2]))) == stale))
        places = {(a, signed(str(n))) for _, a, n in quotes}
        settings = [b for b in raw.get("settings", []) if (b[0], signed(str(b[1]))) in places]
        rest = {k: v for k, v in raw.items() if k != "settings"}
        if kept:
            rows.append({**rest, "numbers": kept, **({"quotes": quotes} if quotes else {}),
                         **({"settings": settings} if settings else {})})
    _write_registry(path, rows)
    return dropped
