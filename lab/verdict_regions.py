"""Verdict words on the pages: rendered from the result lines into ``<!-- verdict -->``
regions and checked, and the outcome prose checked against its claim's line."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from lab import verdicts
from lab.quoted_numbers import (
    VERDICT_REGION,
    blank_code,
    disordered,
    labels,
    matches,
    prose,
    quotes_in,
    source_numbers,
)
from lab.registry import CLAIMS_DIR, OUTCOMES, REPO, declared, outcomes, pages, relooks

HEADLINES = ("README.md", "docs/evolve.md")
_VERDICT_WORDS = re.compile(r"\b(ahead|behind|level|caught up|catch(?:es)? up|non-inferior|"
                            r"beat|beats|lead|leads|trail|trails|outperform\w*|learned on)\b")



def _region_args(args: str) -> tuple[str, dict]:
    path, *rest = shlex.split(args)
    options = dict(item.split("=", 1) for item in rest)
    return path, options


def verdict_text(claim: str, args: str, root: Path = REPO, looks: dict | None = None) -> str:
    """What the region ``<!-- verdict: <claim> <path> [a=.. b=.. digits=.. margin=.. over=..]
    -->`` holds: ``verdicts.phrase`` of the value at ``path`` of the claim's result lines, and
    "re-look k" when the claim is one (``relooks``)."""
    path, options = _region_args(args)
    lines = [json.loads(x) for x in (root / CLAIMS_DIR / f"{claim}.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip()]
    margin = options.get("margin")
    text = verdicts.phrase(verdicts.resolve(lines, path), options.get("a", "A"),
                           options.get("b", "B"), int(options.get("digits", 3)),
                           float(margin) if margin else None,
                           f" {options['over']}" if options.get("over") else "",
                           options.get("unit", "runs"))
    earlier = (looks if looks is not None else relooks(root)).get(claim, [])
    if earlier:
        text += f"; a re-look, claim {len(earlier) + 1} on this question and test file"
    return text


def render_verdicts(text: str, root: Path = REPO, looks: dict | None = None) -> str:
    """``text`` with every verdict region's words rendered from its line."""
    looks = looks if looks is not None else relooks(root)
    return VERDICT_REGION.sub(lambda m: m.group(0).replace(
        m.group(3), verdict_text(m.group(1), m.group(2), root, looks)) if m.group(3) else
        m.group(0)[:m.group(0).index("-->") + 3] + verdict_text(m.group(1), m.group(2), root,
                                                                 looks) + "<!-- /verdict -->",
        text)


def check_verdicts(root: Path = REPO) -> list[str]:
    """A verdict region whose words are not its line's (``verdicts``: one rule); on a headline
    page (``HEADLINES``), a verdict word on a test-labelled line outside a region, and a
    re-look's line that does not say "re-look"."""
    names, looks, failures = set(declared(root)), relooks(root), []
    for path in pages(root):
        file, text = str(path.relative_to(root)), path.read_text(encoding="utf-8")
        for m in VERDICT_REGION.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            try:
                want = verdict_text(m.group(1), m.group(2), root, looks)
            except (ValueError, OSError, KeyError, IndexError) as error:
                failures.append(f"{file}:{line}: verdict region {m.group(1)}: {error}")
                continue
            if " ".join(m.group(3).split()) != want:
                failures.append(f"{file}:{line}: the verdict region of {m.group(1)} says "
                                f"'{' '.join(m.group(3).split())}' where its line gives "
                                f"'{want}': run --write")
        if file not in HEADLINES:
            continue
        outside = prose(VERDICT_REGION.sub(blank_code, text)).splitlines()
        for line, claim in labels(text, names).items():
            word = _VERDICT_WORDS.search(outside[line - 1])
            if word:
                failures.append(f"{file}:{line}: '{word.group(0)}' on a result line of {claim} "
                                "outside a verdict region: say it with <!-- verdict: "
                                f"{claim} PATH a=.. b=.. --><!-- /verdict --> (one rule, "
                                "lab/verdicts.py)")
            if looks.get(claim) and "re-look" not in text.splitlines()[line - 1]:
                failures.append(f"{file}:{line}: {claim} is a re-look (after "
                                f"{', '.join(looks[claim])}) and its line does not say so")
    return failures


def check_outcomes(root: Path = REPO) -> list[str]:
    """The outcome prose of ``outcomes.jsonl`` against its claim: every number of ``shows`` and
    ``does_not_show`` is one of the claim's result line or declaration (as written or rounded,
    with its sign) or of a claim the prose names, and every interval is in order."""
    failures, names = [], set(declared(root))
    for name, row in outcomes(root).items():
        lines, md = root / CLAIMS_DIR / f"{name}.jsonl", root / CLAIMS_DIR / f"{name}.md"
        if not lines.is_file():
            continue
        held = source_numbers(lines.read_text(encoding="utf-8"), json_file=True)
        held |= source_numbers(md.read_text(encoding="utf-8")) if md.is_file() else set()
        for field in ("shows", "does_not_show"):
            prose = row.get(field, "")
            for other in names & set(re.findall(r"[\w.-]+", prose)):  # a claim it names
                path = root / CLAIMS_DIR / f"{other}.jsonl"
                if path.is_file():
                    held |= source_numbers(path.read_text(encoding="utf-8"), json_file=True)
            wrong = [n for _, n, _ in quotes_in(prose) if not matches(n, held)]
            wrong += [t for _, t in disordered(prose)]
            if wrong:
                failures.append(f"{OUTCOMES}: {name} {field}: {wrong} are not its result "
                                f"line's numbers (lab/claims/{name}.jsonl, with sign)")
    return failures
