"""benchmarks/CLAIMS.md from the claims registry: every number README.md, docs/*.md and
examples/*/README.md quote, tied to the place that quotes it and the claim it comes from.

The registry, ``benchmarks/claims/numbers.jsonl``, holds one JSON object per group of numbers
a page quotes:

    {"files": ["README.md"], "numbers": ["+0.294", "+0.223", "+0.364"], "split": "test",
     "claim": "crsp_vs_grpo_test", "what": "CRSP gain on the test schedule",
     "sources": [["benchmarks/notebook/RESULTS.md", "learning_curve, ..., test schedule: ..."]]}

``split`` is one of ``SPLITS`` (``test``: a pre-declared test-split run, named by ``claim``:
``benchmarks/claims/<claim>.md`` or an attempt of ``benchmarks/claims/outcomes.jsonl``;
``dev``: chosen or measured on the data settings were chosen on; ``in-sample``: measured on the
data its rules were written on; ``first-sight``: data nothing was tuned on; ``measurement``: a
time, memory or throughput measured on a named machine, where no data split applies;
``unsourced``: quoted without a committed run to check it against, listed so the gap shows;
``not a claim: ...``: a setting, an example, a version). A claim's numbers are checked against
its ``sources`` (committed files; ``[file, title]`` with a title: the ``### `` section of the
notebook of that title): each must be a number of one of them, as written or rounded, with its
sign when it is written with one (``matches``). Command, date and commit come from the first
section (its command line, the ``## `` heading's date, the first commit hash in it) unless the
entry gives them.

Places, both ways (``check_places``). Each quoted number is matched to the entries that name
its file and list it as written (sign included: ``+0.055`` and ``0.055`` are different
quotes). A number is **test-labelled** when its line links a declared claim
(``results.md#<claim>`` or ``claims/<claim>.md``) or lies between ``<!-- test: <claim> -->`` and
``<!-- /test -->``; then its entry must be that claim's test entry (or ``not a claim``), never
a dev or measurement one. A number from a test entry quoted without that label fails too. And
every number an entry lists must still be quoted by one of its files: ``--prune`` drops the
ones nothing quotes. docs/results.md is generated from the declarations' own result lines
(``benchmarks/results_page.py``) and is not part of this check.

What counts as a number (``numbers_in``): a decimal (``0.499``, ``31.9``) or a percentage
(``26%``, ``0.3%``), thousands separators aside, in the prose. Not counted: integers (counts,
steps, seeds, sizes), anything in a fenced code block or an inline code span, link targets and
URLs, version-like ``x.y.z``, and a decimal glued to a letter or hyphen (``Qwen2.5``, ``0.5B``,
``SmolLM2-1.7B``).

    python benchmarks/claims_table.py --write     # regenerate benchmarks/CLAIMS.md
    python benchmarks/claims_table.py --check     # exit 1: a number out of place, a stale table
    python benchmarks/claims_table.py --prune     # drop registered numbers no page quotes now
    python benchmarks/claims_table.py --suggest docs/training.md   # where missing ones occur
    python benchmarks/claims_table.py --add docs/engines.md --split measurement \
        --what "vLLM CPU server step times" --source benchmarks/results/server_rollouts.jsonl \
        [--claim NAME] [--numbers 4.1 97.2]   # register a file's missing numbers, then --write
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REGISTRY = Path("benchmarks/claims/numbers.jsonl")
TABLE = Path("benchmarks/CLAIMS.md")
RESULTS = Path("benchmarks/notebook/RESULTS.md")
CLAIMS_DIR = Path("benchmarks/claims")
OUTCOMES = CLAIMS_DIR / "outcomes.jsonl"
SPLITS = ("test", "dev", "in-sample", "first-sight", "measurement", "unsourced")
NOT_A_CLAIM = "not a claim: "

_NUMBER = re.compile(
    r"(?<![\w.\-/:@=#])[+\-−±]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%"  # a percentage
    r"|(?<![\w.\-/:@=#])[+\-−±]?(?:\d{1,3}(?:,\d{3})+|\d+)\.\d+(?![\w.]*\d)(?![A-Za-z_\-])")
_SOURCE_NUMBER = re.compile(r"[+\-−]?\d[\d,]*(?:\.\d+)?(?:[eE][+\-]?\d+)?")
_FENCE = re.compile(r"^\s*```.*?^\s*```", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\([^)]*\)|https?://\S+")


def normal(token: str) -> str:
    """A quoted number without its sign and thousands separators.

    >>> [normal(t) for t in ("−0.088", "+26%", "1,498.5", "±0.3%")]
    ['0.088', '26%', '1498.5', '0.3%']
    """
    return token.lstrip("+-−±").replace(",", "")


def signed(token: str) -> str:
    """A quoted number as the registry lists it: its sign kept (``−`` written ``-``, ``±``
    dropped), thousands separators removed.

    >>> [signed(t) for t in ("−0.088", "+26%", "1,498.5", "±0.3%", "0.499")]
    ['-0.088', '+26%', '1498.5', '0.3%', '0.499']
    """
    token = token.replace("−", "-").replace(",", "")
    return token.lstrip("±")


def _blank(match: re.Match) -> str:
    """The match replaced by spaces, newlines kept (so line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def numbers_in(text: str) -> list[tuple[int, str]]:
    """``(line, number)`` of every number quoted in markdown ``text`` (see the module doc),
    each as ``signed`` writes it.

    >>> numbers_in("cut by 26% (−0.023 [+0.013, 0.033]) on Python 3.11\\n`lr=0.5` v1.2.3 Qwen2.5")
    [(1, '26%'), (1, '-0.023'), (1, '+0.013'), (1, '0.033'), (1, '3.11')]
    >>> numbers_in("```\\n0.5\\n```\\n[a](x/0.5.md) 0.5B and 1,498.25 tok/s")
    [(4, '1498.25')]
    """
    for pattern in (_FENCE, _CODE, _LINK):
        text = pattern.sub(_blank, text)
    return [(text.count("\n", 0, m.start()) + 1, signed(m.group(0)))
            for m in _NUMBER.finditer(text)]


_REGION = re.compile(r"<!--\s*test:\s*([\w.-]+)\s*-->(.*?)<!--\s*/test\s*-->", re.S)


def labels(text: str, claims: set[str]) -> dict[int, str]:
    """``line -> claim`` for the test-labelled lines of markdown ``text``: those that link a
    declared claim (``results.md#<claim>``, ``claims/<claim>.md``) and those inside a
    ``<!-- test: <claim> -->`` ... ``<!-- /test -->`` region. Names not in ``claims`` are left
    out.

    >>> text = "a\\nx [r](results.md#c1) 0.5\\n<!-- test: c2 -->\\n0.1\\n<!-- /test -->"
    >>> labels(text, {"c1", "c2"})
    {2: 'c1', 3: 'c2', 4: 'c2', 5: 'c2'}
    """
    out: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for name in re.findall(r"(?:results\.md#|claims/)([\w.-]+?)(?:\.md|\.jsonl)?(?=[)`\s#]|$)",
                               line):
            if name in claims:
                out[number] = name
                break
    for match in _REGION.finditer(text):
        if match.group(1) in claims:
            first = text.count("\n", 0, match.start()) + 1
            for number in range(first, first + match.group(0).count("\n") + 1):
                out[number] = match.group(1)
    return dict(sorted(out.items()))


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "").replace("−", "-"))
    except InvalidOperation:
        return None


def matches(quoted: str, source_numbers: set[str]) -> bool:
    """Whether ``quoted`` is one of ``source_numbers``, as written or rounded.

    A decimal with d places matches a source number that rounds to it at d places; a
    percentage also matches a fraction 100 times smaller (``-26%`` ~ ``-0.2613``). A quote
    written with a sign must not meet the opposite sign in the source (an unsigned source
    number, ``cut 26%``, matches either); an unsigned quote is a magnitude and matches either.

    >>> matches("0.023", {"0.0227"}), matches("-26%", {"-0.2613"}), matches("0.4", {"0.46"})
    (True, True, False)
    >>> matches("+0.055", {"-0.055"}), matches("0.055", {"-0.055"}), matches("-26%", {"26"})
    (False, True, True)
    """
    quoted = signed(quoted)
    sign = quoted[0] if quoted[0] in "+-" else ""
    percent = quoted.endswith("%")
    value = _decimal(quoted.lstrip("+-").rstrip("%"))
    if value is None:
        return False
    places = Decimal(1).scaleb(value.as_tuple().exponent)
    for text in source_numbers:
        number = _decimal(text)
        if number is None:
            continue
        written = text[0] if text[0] in "+-−" else ""
        if sign and written and number != 0 and (written == "+") != (sign == "+"):
            continue
        for candidate in ((abs(number), abs(number) * 100) if percent else (abs(number),)):
            for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN):
                try:
                    if candidate.quantize(places, rounding=mode) == value:
                        return True
                except InvalidOperation:  # too many digits to round to this place
                    break
    return False


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
        found = re.search(r"((?:for |\.venv/bin/)?python[^`]*benchmarks/[^`]*)", line)
        if found:
            return found.group(1).strip().rstrip("\\").strip()
    return ""


def outcomes(root: Path = REPO) -> dict[str, dict]:
    """``benchmarks/claims/outcomes.jsonl``: claim name → its outcome record (empty if none)."""
    path = root / OUTCOMES
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return {row["claim"]: row for row in rows}


def declared(root: Path = REPO) -> list[str]:
    """Every declared claim: the ``benchmarks/claims/*.md`` declarations, then the attempts
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
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{where}: {error!r}; see benchmarks/claims_table.py") from error
        if split not in SPLITS and not split.startswith(NOT_A_CLAIM):
            raise ValueError(f"{where}: split {split!r}: use one of {SPLITS} or "
                             f"'{NOT_A_CLAIM}<why>'")
        if not sources and split != "unsourced" and not split.startswith(NOT_A_CLAIM):
            raise ValueError(f"{where}: a {split} claim needs its sources")
        claim = raw.get("claim", "")
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
            available |= set(_SOURCE_NUMBER.findall(text))
        wrong = [n for n in numbers if sources and not matches(n, available)]
        if wrong:
            raise ValueError(f"{where}: {wrong} not found in its sources (as written or "
                             "rounded, with its sign)")
        names_ = tuple(f"{src} § {t[0]}" if t and t[0] else src for src, *t in sources)
        claims.append(Claim(files, numbers, split, what, names_, command, date, commit, claim,
                            number))
    return claims


def pages(root: Path = REPO) -> list[Path]:
    """The pages whose numbers the registry ties: README.md, docs/*.md (but the generated
    docs/results.md) and examples/*/README.md."""
    docs = [p for p in sorted((root / "docs").glob("*.md")) if p.name != "results.md"]
    return [root / "README.md", *docs, *sorted((root / "examples").glob("*/README.md"))]


def quoted(root: Path = REPO) -> list[tuple[str, int, str, str]]:
    """``(file, line, number, claim)`` of every number the pages quote; ``claim`` is the
    declared claim that labels its line, or ``""``."""
    names = set(declared(root))
    out = []
    for path in pages(root):
        text = path.read_text(encoding="utf-8")
        marks = labels(text, names)
        out += [(str(path.relative_to(root)), line, number, marks.get(line, ""))
                for line, number in numbers_in(text)]
    return out


def _accepts(claim: Claim, label: str) -> bool:
    """Whether ``claim`` may be the source of a number quoted under ``label``."""
    if claim.split.startswith(NOT_A_CLAIM):
        return True
    if label:
        return claim.split == "test" and claim.claim == label
    return claim.split != "test"


def check_places(claims: list[Claim], root: Path = REPO) -> tuple[list[str], set]:
    """Tie each quoted number to its entries; the failures and the ``(entry line, number)``
    pairs some place quotes.

    A failure is a quoted number no entry of its file lists; a test-labelled one whose entries
    are not that claim's (a dev entry holding the same digits does not count); a number of a
    test entry quoted without its claim's label.
    """
    failures, used = [], set()
    for file, line, number, label in quoted(root):
        listing = [c for c in claims if file in c.files and number in c.numbers]
        taking = [c for c in listing if _accepts(c, label)]
        used |= {(c.line, number) for c in taking}
        if taking:
            continue
        where = f"{file}:{line}: {number}"
        if not listing:
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
    return failures, used


def unquoted(claims: list[Claim], used: set) -> list[tuple[Claim, str]]:
    """``(entry, number)`` for every registered number no place quotes any more."""
    return [(c, n) for c in claims for n in c.numbers if (c.line, n) not in used]


def missing(claims: list[Claim], root: Path = REPO) -> list[str]:
    """Every failure of the places check, both ways: a quoted number without its source and
    label, and a registered number nothing quotes."""
    failures, used = check_places(claims, root)
    return failures + [f"{REGISTRY}:{c.line}: {n} ({c.what}) is quoted by none of "
                       f"{', '.join(c.files)}: run --prune, or quote it"
                       for c, n in unquoted(claims, used)]


def how_to_add(missed: list[str]) -> str:
    """The failure message: each failure, and how to fix it."""
    return "\n".join([
        *missed, "",
        f"Register a number in {REGISTRY} (one JSON object per line), e.g.",
        '  {"files": ["README.md"], "numbers": ["+0.294"], "split": "test", "claim": '
        '"crsp_vs_grpo_test", "what": "CRSP gain", "sources": [["benchmarks/claims/'
        'crsp_vs_grpo_test.jsonl"]]}',
        f"(split: one of {', '.join(SPLITS)}, or \"{NOT_A_CLAIM}<setting|example|...>\" "
        "without a source; a test entry names its claim and the page labels the line), then run "
        "`python benchmarks/claims_table.py --write` and commit both. `--suggest FILE` lists "
        "the notebook sections holding each missing number; `--add FILE --split S --what W "
        "--source F` registers a file's missing numbers in one line; `--prune` drops "
        "registered numbers nothing quotes. docs/benchmarks.md#the-claims-registry explains."])


def _test_summary(claims: list[Claim], root: Path) -> str:
    """The computed sentence on test-split claims (declared, with results, quoted)."""
    names = declared(root)
    with_results = [n for n in names if (root / CLAIMS_DIR / f"{n}.jsonl").is_file()
                    or outcomes(root).get(n, {}).get("result")]
    entries = [c for c in claims if c.split == "test"]
    if not entries:
        return ("No claim on the test split is quoted yet: every result below is dev, in-sample "
                "or a measurement until a declared run (`benchmarks/claims/*.md`) appends its "
                "line and a page quotes it.")
    return (f"Test split: {len(names)} declared attempts, {len(with_results)} with results "
            f"([docs/results.md](../docs/results.md)); {len(entries)} entries below quote "
            f"{len({c.claim for c in entries})} of them.")


def render(claims: list[Claim], root: Path = REPO) -> str:
    """CLAIMS.md: one row per claim and the files that quote its numbers (no line numbers: an
    edit elsewhere in a page must not make the table stale)."""
    _, used = check_places(claims, root)
    head = [
        "# Claims: every number README.md, docs/*.md and examples/*/README.md quote", "",
        "Generated by `python benchmarks/claims_table.py --write` from "
        f"`{REGISTRY}`; do not edit. The lab notebook with every run is "
        f"[{RESULTS.relative_to('benchmarks')}]({RESULTS.relative_to('benchmarks')}); "
        "pre-declared test-split claims are in [claims/](claims/) and, with their outcomes, in "
        "[docs/results.md](../docs/results.md). A number counts if it is a decimal or a "
        "percentage in the prose (not in code, links or version strings: "
        "`benchmarks/claims_table.py` says exactly); `tests/benchmarks/test_claims_table.py` "
        "fails when a quoted number has no entry of its file, when a test-labelled number's "
        "entry is not its claim's, when an entry lists a number nothing quotes, or when a listed "
        "number is not in its sources.", "",
        "Splits: **test** = a pre-declared run on the test split (`benchmarks/splits.py`), its "
        "claim named; **dev** = measured on the seeds and data the settings were chosen on (not "
        "a held-out claim); **in-sample** = on the data its rules were written on; "
        "**first-sight** = on data nothing was tuned on; **measurement** = a time, memory or "
        "throughput on a named machine (no data split applies); **unsourced** = quoted without "
        "a committed run to check it against (the quoting page's owner should add one); *not a "
        "claim* = a setting, an example or a version.", "",
        _test_summary(claims, root), "",
        "| split | claim | numbers | what | sources | command | date | commit | quoted in |",
        "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    order = {split: i for i, split in enumerate(SPLITS)}
    for claim in sorted(claims, key=lambda c: (order.get(c.split, len(SPLITS)), c.claim,
                                               c.files, c.what)):
        places = sorted({f for f in claim.files for n in claim.numbers if (claim.line, n) in used})
        cells = [claim.split, claim.claim, ", ".join(claim.numbers), claim.what,
                 "; ".join(claim.sources), f"`{claim.command}`" if claim.command else "",
                 claim.date, claim.commit, ", ".join(places) or "(not quoted now)"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(head + rows) + "\n"


def suggest(file: str, claims: list[Claim], root: Path = REPO) -> str:
    """For each unregistered number of ``file``, the notebook sections that hold it."""
    results = sections((root / RESULTS).read_text(encoding="utf-8"))
    found = {title: set(_SOURCE_NUMBER.findall(text)) for title, (text, _) in results.items()}
    out = []
    for path, line, number, label in quoted(root):
        if path != file or any(path in c.files and number in c.numbers and _accepts(c, label)
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
    if numbers is None:
        wanted = sorted({n for f, _, n, label in quoted(root) if f == file
                         and label == (claim if split == "test" else "")
                         and not any(f in c.files and n in c.numbers and _accepts(c, label)
                                     for c in claims)})
    else:
        wanted = sorted({signed(n) for n in numbers})
    if not wanted:
        raise ValueError(f"{file} has no number missing from {TABLE}")
    line = {"files": [file], "numbers": wanted, "split": split,
            **({"claim": claim} if claim else {}), "what": what,
            **({"sources": sources} if sources else {})}
    path = root / REGISTRY
    before = path.read_text(encoding="utf-8")
    path.write_text(before + json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        load_claims(root)
    except ValueError:
        path.write_text(before, encoding="utf-8")
        raise
    return line


def prune(root: Path = REPO) -> int:
    """Drop every registered number no page quotes now (and entries left empty); how many."""
    claims = load_claims(root)
    _, used = check_places(claims, root)
    path = root / REGISTRY
    rows, dropped = [], 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        kept = [n for n in raw["numbers"] if (number, signed(str(n))) in used]
        dropped += len(raw["numbers"]) - len(kept)
        if kept:
            rows.append({**raw, "numbers": kept})
    _write_registry(path, rows)
    return dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help=f"regenerate {TABLE}")
    group.add_argument("--check", action="store_true", help="exit 1 on a number out of place")
    group.add_argument("--prune", action="store_true", help="drop numbers nothing quotes")
    group.add_argument("--suggest", metavar="FILE", help="notebook sections per missing one")
    group.add_argument("--add", metavar="FILE", help="register FILE's missing numbers")
    parser.add_argument("--split", help=f"with --add: one of {SPLITS} or '{NOT_A_CLAIM}<why>'")
    parser.add_argument("--claim", default="", help="with --add --split test: the claim's name")
    parser.add_argument("--what", default="", help="with --add: what the numbers are")
    parser.add_argument("--source", action="append", default=[], metavar="FILE[::TITLE]",
                        help="with --add: a committed file (the notebook::<### title>)")
    parser.add_argument("--numbers", nargs="+", default=None, help="with --add: only these")
    args = parser.parse_args(argv)
    if args.add:
        if not args.split or not args.what:
            parser.error("--add needs --split and --what")
        try:
            line = add_entry(args.add, args.split, args.what,
                             [item.split("::", 1) for item in args.source], args.numbers,
                             claim=args.claim)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"added {json.dumps(line, ensure_ascii=False)}; now run --write", file=sys.stderr)
        return 0
    try:
        if args.prune:
            print(f"dropped {prune()} numbers nothing quotes; now run --write", file=sys.stderr)
            return 0
        claims = load_claims()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.suggest:
        print(suggest(args.suggest, claims))
        return 0
    missed = missing(claims)
    if args.write:
        path = REPO / TABLE
        temp = path.with_suffix(".md.tmp")
        temp.write_text(render(claims), encoding="utf-8")
        temp.replace(path)
        print(f"wrote {TABLE}: {len(claims)} claims", file=sys.stderr)
    stale = (REPO / TABLE).read_text(encoding="utf-8") != render(claims) if (
        REPO / TABLE).exists() else True
    if missed or (args.check and stale):
        print(how_to_add(missed) if missed else f"{TABLE} is stale: run --write",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
