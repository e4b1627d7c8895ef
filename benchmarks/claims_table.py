"""benchmarks/CLAIMS.md from the claims registry: every number README.md and docs/*.md quote.

The registry, ``benchmarks/claims/numbers.jsonl``, holds one JSON object per group of numbers
a doc section quotes:

    {"files": ["README.md"], "numbers": ["0.499", "0.463", "0.535"], "split": "dev",
     "what": "CRSP step-8 solve rate", "sources": [["benchmarks/RESULTS.md",
     "learning_curve over training seeds, ..."]]}

``split`` is one of ``SPLITS`` (``dev``: chosen or measured on the data settings were chosen
on; ``test``: a pre-declared test-split run, ``benchmarks/claims/<name>.md``; ``in-sample``:
measured on the data its rules were written on; ``first-sight``: data nothing was tuned on;
``measurement``: a time, memory or throughput measured on a named machine, where no data split
applies; ``unsourced``: quoted without a committed run to check it against, listed so the gap
shows; ``not a claim: ...``: a setting, an example, a version). A claim's numbers are checked
against its ``sources`` (committed files; ``[file, title]`` with a title: the ``### `` section of
RESULTS.md of that title): each must be a number of one of them, as written or rounded
(``matches``). Command, date and commit come from the first section (its command line, the
``## `` heading's date, the first commit hash in it) unless the entry gives them. A number is
covered where an entry whose ``files`` name that file lists it.

What counts as a number (``numbers_in``): a decimal (``0.499``, ``31.9``) or a percentage
(``26%``, ``0.3%``), sign and thousands separators aside, in the prose of README.md and
docs/*.md. Not counted: integers (counts, steps, seeds, sizes), anything in a fenced code block
or an inline code span, link targets and URLs, version-like ``x.y.z``, and a decimal glued to a
letter or hyphen (``Qwen2.5``, ``0.5B``, ``SmolLM2-1.7B``).

    python benchmarks/claims_table.py --write     # regenerate benchmarks/CLAIMS.md
    python benchmarks/claims_table.py --check     # exit 1: unregistered numbers, stale table
    python benchmarks/claims_table.py --suggest docs/training.md   # where missing ones occur
    python benchmarks/claims_table.py --add docs/engines.md --split measurement \
        --what "vLLM CPU server step times" --source benchmarks/results/server_rollouts.jsonl \
        [--numbers 4.1 97.2]   # register a file's missing numbers (all, or these), then --write
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
RESULTS = Path("benchmarks/RESULTS.md")
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


def _blank(match: re.Match) -> str:
    """The match replaced by spaces, newlines kept (so line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def numbers_in(text: str) -> list[tuple[int, str]]:
    """``(line, number)`` of every number quoted in markdown ``text`` (see the module doc).

    >>> numbers_in("cut by 26% (−0.023 [+0.013, 0.033]) on Python 3.11\\n`lr=0.5` v1.2.3 Qwen2.5")
    [(1, '26%'), (1, '0.023'), (1, '0.013'), (1, '0.033'), (1, '3.11')]
    >>> numbers_in("```\\n0.5\\n```\\n[a](x/0.5.md) 0.5B and 1,498.25 tok/s")
    [(4, '1498.25')]
    """
    for pattern in (_FENCE, _CODE, _LINK):
        text = pattern.sub(_blank, text)
    return [(text.count("\n", 0, m.start()) + 1, normal(m.group(0)))
            for m in _NUMBER.finditer(text)]


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "").replace("−", "-"))
    except InvalidOperation:
        return None


def matches(quoted: str, source_numbers: set[str]) -> bool:
    """Whether ``quoted`` is one of ``source_numbers``, as written or rounded.

    A decimal with d places matches a source number that rounds to it at d places; a
    percentage also matches a fraction 100 times smaller (``26%`` ~ ``-0.2613``). Signs are
    ignored (the docs write gains and cuts both ways).

    >>> matches("0.023", {"0.0227"}), matches("26%", {"-0.2613"}), matches("0.4", {"0.46"})
    (True, True, False)
    """
    percent = quoted.endswith("%")
    value = _decimal(quoted.rstrip("%"))
    if value is None:
        return False
    places = Decimal(1).scaleb(value.as_tuple().exponent)
    for text in source_numbers:
        number = _decimal(text)
        if number is None:
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


def sections(results: str) -> dict[str, tuple[str, str]]:
    """RESULTS.md ``### `` sections: title → (text, date of the ``## `` heading above it).

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


def load_claims(root: Path = REPO) -> list[Claim]:
    """The registry, each claim completed from its sources.

    Raises:
        ValueError: a malformed line, an unknown split, a missing source or section, or a
            number no source holds.
    """
    results = sections((root / RESULTS).read_text(encoding="utf-8"))
    claims = []
    for number, line in enumerate((root / REGISTRY).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{REGISTRY}:{number}"
        try:
            raw = json.loads(line)
            files = tuple(raw["files"])
            numbers = tuple(normal(str(n)) for n in raw["numbers"])
            split, what = raw["split"], raw["what"]
            sources = [tuple(item) for item in raw.get("sources", [])]
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{where}: {error!r}; see benchmarks/claims_table.py") from error
        if split not in SPLITS and not split.startswith(NOT_A_CLAIM):
            raise ValueError(f"{where}: split {split!r}: use one of {SPLITS} or "
                             f"'{NOT_A_CLAIM}<why>'")
        if not sources and split != "unsourced" and not split.startswith(NOT_A_CLAIM):
            raise ValueError(f"{where}: a {split} claim needs its sources")
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
                             "rounded)")
        names = tuple(f"{src} § {t[0]}" if t and t[0] else src for src, *t in sources)
        claims.append(Claim(files, numbers, split, what, names, command, date, commit))
    return claims


def quoted(root: Path = REPO) -> list[tuple[str, int, str]]:
    """``(file, line, number)`` of every number in README.md and docs/*.md."""
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [(str(path.relative_to(root)), line, number) for path in files
            for line, number in numbers_in(path.read_text(encoding="utf-8"))]


def missing(claims: list[Claim], root: Path = REPO) -> list[tuple[str, int, str]]:
    """The quoted numbers no claim of their file lists."""
    registered = {(f, n) for claim in claims for f in claim.files for n in claim.numbers}
    return [q for q in quoted(root) if (q[0], q[2]) not in registered]


def how_to_add(missed: list[tuple[str, int, str]]) -> str:
    """The failure message: each missing number, and how to register it."""
    lines = [f"{file}:{line}: {number} is not in {TABLE}" for file, line, number in missed]
    return "\n".join([
        *lines, "",
        f"Register each in {REGISTRY} (one JSON object per line), e.g.",
        '  {"files": ["README.md"], "numbers": ["0.499"], "split": "dev", "what": "CRSP solve '
        'rate at step 8", "sources": [["benchmarks/RESULTS.md", "<the ### title of its run>"]]}',
        f"(split: one of {', '.join(SPLITS)}, or \"{NOT_A_CLAIM}<setting|example|...>\" "
        "without a source), then run `python benchmarks/claims_table.py --write` and commit "
        f"both. `python benchmarks/claims_table.py --suggest FILE` lists the RESULTS.md "
        "sections holding each missing number; `--add FILE --split S --what W --source F` "
        "registers a file's missing numbers in one line."])


def render(claims: list[Claim], root: Path = REPO) -> str:
    """CLAIMS.md: one row per claim and the files that quote its numbers (no line numbers: an
    edit elsewhere in a page must not make the table stale)."""
    quoted_in = {(file, number) for file, _, number in quoted(root)}
    head = [
        "# Claims: every number README.md and docs/*.md quote", "",
        "Generated by `python benchmarks/claims_table.py --write` from "
        f"`{REGISTRY}`; do not edit. The lab notebook with every run is "
        f"[RESULTS.md](RESULTS.md); pre-declared test-split claims are in "
        "[claims/](claims/). A number counts if it is a decimal or a percentage in the prose "
        "(not in code, links or version strings: `benchmarks/claims_table.py` says exactly); "
        "`tests/benchmarks/test_claims_table.py` fails when one is not listed here, or when a "
        "listed number is not in its sources.", "",
        "Splits: **test** = a pre-declared run on the test split (`benchmarks/splits.py`); "
        "**dev** = measured on the seeds and data the settings were chosen on (not a held-out "
        "claim); **in-sample** = on the data its rules were written on; **first-sight** = on "
        "data nothing was tuned on; **measurement** = a time, memory or throughput on a named "
        "machine (no data split applies); **unsourced** = quoted without a committed run to check "
        "it against (the quoting page's owner should add one); *not a claim* = a setting, an "
        "example or a version.", "",
        "No claim on the test split has been made yet: every result below is dev, in-sample or "
        "a measurement until its declared run (`benchmarks/claims/*.md`) appends its line.", "",
        "| split | numbers | what | sources | command | date | commit | quoted in |",
        "|---|---|---|---|---|---|---|---|"]
    rows = []
    order = {split: i for i, split in enumerate(SPLITS)}
    for claim in sorted(claims, key=lambda c: (order.get(c.split, len(SPLITS)), c.files,
                                               c.what)):
        places = sorted({f for f in claim.files for n in claim.numbers if (f, n) in quoted_in})
        cells = [claim.split, ", ".join(claim.numbers), claim.what, "; ".join(claim.sources),
                 f"`{claim.command}`" if claim.command else "", claim.date, claim.commit,
                 ", ".join(places) or "(not quoted now)"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(head + rows) + "\n"


def suggest(file: str, claims: list[Claim], root: Path = REPO) -> str:
    """For each unregistered number of ``file``, the RESULTS.md sections that hold it."""
    results = sections((root / RESULTS).read_text(encoding="utf-8"))
    found = {title: set(_SOURCE_NUMBER.findall(text)) for title, (text, _) in results.items()}
    out = []
    for path, line, number in missing(claims, root):
        if path != file:
            continue
        hits = [title for title, nums in found.items() if matches(number, nums)]
        out.append(f"{path}:{line}: {number}: " + (" | ".join(hits[:4]) or "no section"))
    return "\n".join(out)


def add_entry(file: str, split: str, what: str, sources: list[list[str]],
              numbers: list[str] | None, root: Path = REPO) -> dict:
    """Append a registry line for ``file``'s missing numbers (or ``numbers``); the line.

    Raises:
        ValueError: nothing to add, or (through ``load_claims``) a number no source holds; the
            registry is left as it was.
    """
    claims = load_claims(root)
    wanted = sorted({n for f, _, n in missing(claims, root) if f == file}
                    if numbers is None else {normal(n) for n in numbers})
    if not wanted:
        raise ValueError(f"{file} has no number missing from {TABLE}")
    line = {"files": [file], "numbers": wanted, "split": split, "what": what,
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help=f"regenerate {TABLE}")
    group.add_argument("--check", action="store_true", help="exit 1 on a missing number")
    group.add_argument("--suggest", metavar="FILE", help="RESULTS.md sections per missing one")
    group.add_argument("--add", metavar="FILE", help="register FILE's missing numbers")
    parser.add_argument("--split", help=f"with --add: one of {SPLITS} or '{NOT_A_CLAIM}<why>'")
    parser.add_argument("--what", default="", help="with --add: what the numbers are")
    parser.add_argument("--source", action="append", default=[], metavar="FILE[::TITLE]",
                        help="with --add: a committed file (RESULTS.md::<### title>)")
    parser.add_argument("--numbers", nargs="+", default=None, help="with --add: only these")
    args = parser.parse_args(argv)
    if args.add:
        if not args.split or not args.what:
            parser.error("--add needs --split and --what")
        try:
            line = add_entry(args.add, args.split, args.what,
                             [item.split("::", 1) for item in args.source], args.numbers)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"added {json.dumps(line, ensure_ascii=False)}; now run --write", file=sys.stderr)
        return 0
    try:
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
