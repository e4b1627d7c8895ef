"""Every quoted number tied to its place and claim, both ways (``missing``)."""

from __future__ import annotations

from pathlib import Path

from lab.quoted_numbers import disordered, labels, quotes_in
from lab.registry import REGISTRY, REPO, Claim, declared, pages
from lab.settings_values import check_settings
from lab.verdict_regions import check_outcomes, check_verdicts


def quoted(root: Path = REPO) -> list[tuple[str, int, str, str, str]]:
    """``(file, line, number, claim, anchor)`` of every number the pages quote (and every
    ``N of M`` count on a test-labelled line); ``claim`` is the declared claim that labels its
    line, or ``""``; ``anchor`` ties the quote to its place (``anchor``)."""
    names = set(declared(root))
    out = []
    for path in pages(root):
        text = path.read_text(encoding="utf-8")
        marks = labels(text, names)
        out += [(str(path.relative_to(root)), line, number, marks.get(line, ""), place)
                for line, number, place in quotes_in(text, set(marks))]
    return out


def accepts(claim: Claim, label: str) -> bool:
    """Whether ``claim`` may be the source of a number quoted under ``label``."""
    if label:  # a result's line: "not a claim" is refused there
        return claim.split == "test" and claim.claim == label
    return claim.split != "test"


def check_places(claims: list[Claim], root: Path = REPO) -> tuple[list[str], set, dict]:
    """Tie each quoted number to its entry and place; the failures, the ``(entry line,
    number)`` pairs some place quotes and, per entry line, the registered quotes no place holds.

    A failure is a quoted number no entry of its file lists; a test-labelled one whose entries
    are not that claim's (a dev or "not a claim" entry holding the same digits does not count);
    a number of a test entry quoted without its claim's label; a quote whose entry does not
    list it at its place (``file``, ``anchor``), so changing one of two quotes of the same
    number fails; a registered quote its place no longer holds; an interval out of order.
    """
    failures, used = [], set()
    left = {c.line: list(c.quotes) for c in claims}
    loose = []
    for file, line, number, label, place in quoted(root):
        listing = [c for c in claims if file in c.files and number in c.numbers]
        taking = [c for c in listing if accepts(c, label)]
        placed = next((c for c in taking if (file, place, number) in left[c.line]), None)
        where = f"{file}:{line}: {number}"
        if placed:
            left[placed.line].remove((file, place, number))
            used.add((placed.line, number))
        elif taking:
            loose.append((where, file, place, number, taking))
        elif not listing:
            failures.append(f"{where} has no source: no entry of {REGISTRY} naming {file} lists "
                            "it (as written, sign included)")
        elif label:
            splits = ", ".join(sorted({f"{c.split} (line {c.line})" for c in listing}))
            failures.append(f"{where} is labelled test ({label}) but its entries are {splits}: "
                            f"register it with \"split\": \"test\", \"claim\": \"{label}\"")
        else:
            names = ", ".join(sorted({c.claim for c in listing}))
            failures.append(f"{where} comes from test claim {names} but its line is not labelled"
                            f": link results.md#{names.split(',')[0]} on it or wrap it in "
                            f"<!-- test: {names.split(',')[0]} --> ... <!-- /test -->")
    for where, file, place, _, taking in loose:
        failures.append(f"{where} is not tied to its place: no entry lists it after "
                        f"'{place}' (entries {', '.join(str(c.line) for c in taking)} list it "
                        f"elsewhere in {file}); if only the words around it changed, run "
                        f"--tie {file}")
    by_line = {c.line: c for c in claims}
    failures += [f"{REGISTRY}:{n}: {q[2]} registered in {q[0]} after '{q[1]}' is not quoted "
                 f"there ({by_line[n].what}): quote it, or run --prune"
                 for n, rest in left.items() for q in rest]
    for path in pages(root):
        failures += [f"{path.relative_to(root)}:{line}: {triple} is not an interval: its low "
                     "end, point and high end must be in order (point [low, high])"
                     for line, triple in disordered(path.read_text(encoding="utf-8"))]
    return failures, used, left


def unquoted(claims: list[Claim], used: set) -> list[tuple[Claim, str]]:
    """``(entry, number)`` for every registered number no place quotes any more."""
    return [(c, n) for c in claims for n in c.numbers if (c.line, n) not in used]


def missing(claims: list[Claim], root: Path = REPO) -> list[str]:
    """Every failure of the places check, both ways (a quoted number without its source,
    label and place; a registered number nothing quotes), of the verdict regions, of the
    outcome prose and of the settings bound to the code's values."""
    failures, used, _ = check_places(claims, root)
    failures += [f"{REGISTRY}:{c.line}: {n} ({c.what}) is quoted by none of "
                 f"{', '.join(c.files)}: run --prune, or quote it"
                 for c, n in unquoted(claims, used) if not any(q[2] == n for q in c.quotes)]
    return failures + check_verdicts(root) + check_outcomes(root) + check_settings(claims)


# The pages whose result sentences are headlines: their test-labelled lines say a verdict only
# inside a verdict region, and mark a re-look as one.
