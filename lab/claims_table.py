"""lab/CLAIMS.md from the claims registry: every number README.md, docs/*.md and
examples/*/README.md quote, tied to the place that quotes it and the claim it comes from.

The registry, ``lab/claims/numbers.jsonl``, holds one JSON object per group of numbers
a page quotes:

    {"files": ["README.md"], "numbers": ["+0.294", "+0.223", "+0.364"], "split": "test",
     "claim": "crsp_vs_grpo_test", "what": "CRSP gain on the test schedule",
     "sources": [["lab/notebook/RESULTS.md", "learning_curve, ..., test schedule: ..."]]}

``split`` is one of ``SPLITS`` (``test``: a pre-declared test-split run, named by ``claim``:
``lab/claims/<claim>.md`` or an attempt of ``lab/claims/outcomes.jsonl``;
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
(``lab/results_page.py``) and is not part of this check.

Structure (issue 73). Each quote is tied to its own place: an entry's ``quotes`` list
``[file, anchor, number]`` (``anchor``: up to 24 characters of its line before it), so changing
one of two quotes of the same number fails; ``--tie FILE`` re-ties quotes whose words moved,
never a changed number. An interval is one ordered triple: ``point [low, high]`` with
``low <= point <= high`` on every page. The sign is part of the value: a JSON number (a result
line) without ``-`` is positive, so a quote flipped to ``-`` fails its source. On a
test-labelled line a count ``N of M`` is a number too, and ``not a claim`` is refused there.
Verdict words come from ``lab/verdicts.py`` (one rule), rendered by ``--write`` into
``<!-- verdict: <claim> <path> a=.. b=.. [margin=..] -->...<!-- /verdict -->`` regions and
checked; on ``HEADLINES`` pages a verdict word outside a region on a result line fails, and a
re-look's line must say "re-look" (``relooks``: an earlier claim asked the same question of
the same test files, by hash). The outcome prose of ``outcomes.jsonl`` is checked against its
claim's result line (``check_outcomes``).

What counts as a number (``numbers_in``): a decimal (``0.499``, ``31.9``) or a percentage
(``26%``, ``0.3%``), thousands separators aside, in the prose. Not counted: integers (counts,
steps, seeds, sizes), anything in a fenced code block or an inline code span, link targets and
URLs, version-like ``x.y.z``, and a decimal glued to a letter or hyphen (``Qwen2.5``, ``0.5B``,
``SmolLM2-1.7B``).

    python -m lab.claims_table --write     # regenerate lab/CLAIMS.md
    python -m lab.claims_table --check     # exit 1: a number out of place, a stale table
    python -m lab.claims_table --prune     # drop registered numbers no page quotes now
    python -m lab.claims_table --tie README.md   # re-tie quotes whose words moved
    python -m lab.claims_table --suggest docs/training.md   # where missing ones occur
    python -m lab.claims_table --add docs/engines.md --split measurement \
        --what "vLLM CPU server step times" --source lab/results/server_rollouts_smollm2.jsonl \
        [--claim NAME] [--numbers 4.1 97.2]   # register a file's missing numbers, then --write
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

from benchmarks.provenance import added, committed_at, sha256_at
from lab import verdicts

REPO = Path(__file__).resolve().parents[1]
REGISTRY = Path("lab/claims/numbers.jsonl")
TABLE = Path("lab/CLAIMS.md")
RESULTS = Path("lab/notebook/RESULTS.md")
CLAIMS_DIR = Path("lab/claims")
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


_JSON_FENCE = re.compile(r"^\s*```json\s*$(.*?)^\s*```", re.S | re.M)


def source_numbers(text: str, json_file: bool = False) -> set[str]:
    """The numbers a source holds. A JSON number (a ``.json``/``.jsonl`` file, a ```` ```json ````
    block of the notebook) is a value with its sign: an unsigned one is written ``+``, so a
    quote with the opposite sign does not match it. An unsigned number in prose (``cut 26%``)
    is a magnitude and keeps no sign.

    >>> sorted(source_numbers('cut 26%\\n```json\\n{"d": 0.29, "e": -0.1}\\n```'))
    ['+0.29', '-0.1', '26']
    """
    def signed_all(part: str) -> set[str]:
        return {n if n[0] in "+-−" else "+" + n for n in _SOURCE_NUMBER.findall(part)}

    if json_file:
        return signed_all(text)
    fenced = "".join(m.group(1) for m in _JSON_FENCE.finditer(text))
    return set(_SOURCE_NUMBER.findall(_JSON_FENCE.sub("", text))) | signed_all(fenced)


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
    text = _prose(text)
    return [(text.count("\n", 0, m.start()) + 1, signed(m.group(0)))
            for m in _NUMBER.finditer(text)]


_REGION = re.compile(r"<!--\s*test:\s*([\w.-]+)\s*-->(.*?)<!--\s*/test\s*-->", re.S)
_VERDICT = re.compile(r"<!--\s*verdict:\s*([\w.-]+)\s+(.*?)\s*-->(.*?)<!--\s*/verdict\s*-->", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_COUNT = re.compile(r"(?<![\w.\-])(\d+) of (\d+)(?![\w.])")
_TRIPLE = re.compile(r"([+\-−]?\d+(?:\.\d+)?%?)\s*\[([+\-−]?\d+(?:\.\d+)?%?),\s*"
                     r"([+\-−]?\d+(?:\.\d+)?%?)\]")
ANCHOR = 24  # characters of a quote's line before it that tie it to its place


def _prose(text: str) -> str:
    """``text`` with code, links and URLs blanked (newlines kept)."""
    for pattern in (_FENCE, _CODE, _LINK, _COMMENT):
        text = pattern.sub(_blank, text)
    return text


def anchor(line_text: str, start: int) -> str:
    """The place of a quote: up to ``ANCHOR`` characters of its line before it, whitespace
    collapsed.

    >>> anchor("| TPE, 12 of 16 trials | −0.0150 [", 25)
    '| TPE, 12 of 16 trials |'
    """
    return " ".join(line_text[:start].split())[-ANCHOR:].strip()


def quotes_in(text: str, counted: set[int] = frozenset()) -> list[tuple[int, str, str]]:
    """``(line, number, anchor)`` of every number of markdown ``text`` (``numbers_in``), and on
    the lines in ``counted`` (a result's lines) every count ``N of M`` too, in order.

    >>> [q[:2] for q in quotes_in("learned on 3 of 4 runs, +0.027 [+0.001, +0.052]", {1})]
    [(1, '3 of 4'), (1, '+0.027'), (1, '+0.001'), (1, '+0.052')]
    >>> quotes_in("learned on 3 of 4 runs, +0.027")[0]
    (1, '+0.027', 'learned on 3 of 4 runs,')
    """
    text = _prose(text)
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    found = [(m.start(), signed(m.group(0))) for m in _NUMBER.finditer(text)]
    found += [(m.start(), f"{m.group(1)} of {m.group(2)}") for m in _COUNT.finditer(text)
              if text.count("\n", 0, m.start()) + 1 in counted]
    out = []
    for start, number in sorted(found):
        line = text.count("\n", 0, start) + 1
        out.append((line, number, anchor(text[starts[line - 1]:], start - starts[line - 1])))
    return out


def disordered(text: str) -> list[tuple[int, str]]:
    """``(line, interval)`` of every ``point [low, high]`` of ``text`` whose ends are out of
    order (``low <= point <= high`` fails): an interval is one ordered triple.

    >>> disordered("ok +0.294 [+0.223, +0.364]; bad +0.364 [+0.223, +0.294]")
    [(1, '+0.364 [+0.223, +0.294]')]
    """
    text, out = _prose(text), []
    for m in _TRIPLE.finditer(text):
        point, low, high = (_decimal(signed(g).rstrip("%")) for g in m.groups())
        if None in (point, low, high) or not low <= point <= high:
            out.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return out


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
    for match in [*_REGION.finditer(text), *_VERDICT.finditer(text)]:
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
    count = _COUNT.fullmatch(quoted)
    if count:  # "N of M": both whole numbers in the source, N <= M
        whole = {n.lstrip("+-−").replace(",", "") for n in source_numbers}
        return int(count.group(1)) <= int(count.group(2)) and {
            count.group(1), count.group(2)} <= whole
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
    quotes: tuple[tuple[str, str, str], ...] = ()  # (file, anchor, number): each quote's place


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
                            number, places))
    return claims


def pages(root: Path = REPO) -> list[Path]:
    """The pages whose numbers the registry ties: README.md, docs/*.md (but the generated
    docs/results.md) and examples/*/README.md."""
    docs = [p for p in sorted((root / "docs").glob("*.md")) if p.name != "results.md"]
    return [root / "README.md", *docs, *sorted((root / "examples").glob("*/README.md"))]


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


def _accepts(claim: Claim, label: str) -> bool:
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
        taking = [c for c in listing if _accepts(c, label)]
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
    label and place; a registered number nothing quotes), of the verdict regions and of the
    outcome prose."""
    failures, used, _ = check_places(claims, root)
    failures += [f"{REGISTRY}:{c.line}: {n} ({c.what}) is quoted by none of "
                 f"{', '.join(c.files)}: run --prune, or quote it"
                 for c, n in unquoted(claims, used) if not any(q[2] == n for q in c.quotes)]
    return failures + check_verdicts(root) + check_outcomes(root)


# The pages whose result sentences are headlines: their test-labelled lines say a verdict only
# inside a verdict region, and mark a re-look as one.
HEADLINES = ("README.md", "docs/evolve.md")
_VERDICT_WORDS = re.compile(r"\b(ahead|behind|level|caught up|catch(?:es)? up|non-inferior|"
                            r"beat|beats|lead|leads|trail|trails|outperform\w*|learned on)\b")


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
    return _VERDICT.sub(lambda m: m.group(0).replace(
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
        for m in _VERDICT.finditer(text):
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
        outside = _prose(_VERDICT.sub(_blank, text)).splitlines()
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


def how_to_add(missed: list[str]) -> str:
    """The failure message: each failure, and how to fix it."""
    return "\n".join([
        *missed, "",
        f"Register a number in {REGISTRY} (one JSON object per line), e.g.",
        '  {"files": ["README.md"], "numbers": ["+0.294"], "split": "test", "claim": '
        '"crsp_vs_grpo_test", "what": "CRSP gain", "sources": [["lab/claims/'
        'crsp_vs_grpo_test.jsonl"]]}',
        f"(split: one of {', '.join(SPLITS)}, or \"{NOT_A_CLAIM}<setting|example|...>\" "
        "without a source; a test entry names its claim and the page labels the line), then run "
        "`python -m lab.claims_table --write` and commit both. `--suggest FILE` lists "
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
                "or a measurement until a declared run (`lab/claims/*.md`) appends its "
                "line and a page quotes it.")
    return (f"Test split: {len(names)} declared attempts, {len(with_results)} with results "
            f"([docs/results.md](../docs/results.md)); {len(entries)} entries below quote "
            f"{len({c.claim for c in entries})} of them.")


def render(claims: list[Claim], root: Path = REPO) -> str:
    """CLAIMS.md: one row per claim and the files that quote its numbers (no line numbers: an
    edit elsewhere in a page must not make the table stale)."""
    _, used, _ = check_places(claims, root)
    head = [
        "# Claims: every number README.md, docs/*.md and examples/*/README.md quote", "",
        "Generated by `python -m lab.claims_table --write` from "
        f"`{REGISTRY}`; do not edit. The lab notebook with every run is "
        f"[{RESULTS.relative_to('lab')}]({RESULTS.relative_to('lab')}); "
        "pre-declared test-split claims are in [claims/](claims/) and, with their outcomes, in "
        "[docs/results.md](../docs/results.md). A number counts if it is a decimal or a "
        "percentage in the prose (not in code, links or version strings: "
        "`lab/claims_table.py` says exactly); `tests/lab/test_claims_table.py` "
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
    for path, line, number, label, _ in quoted(root):
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
    label = claim if split == "test" else ""
    left = {c.line: list(c.quotes) for c in claims}
    places = []  # the file's quotes no entry holds at their place, under this label
    for f, _, n, mark, place in quoted(root):
        hit = next((c for c in claims if (f, place, n) in left[c.line] and _accepts(c, mark)),
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
                  and _accepts(c, label)]
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
        if kept:
            rows.append({**raw, "numbers": kept, **({"quotes": quotes} if quotes else {})})
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
    group.add_argument("--tie", metavar="FILE", help="re-tie FILE's quotes whose words moved")
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
        if args.tie:
            print(f"re-tied {tie(args.tie)} quotes of {args.tie}; now run --write",
                  file=sys.stderr)
            return 0
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
    if args.write:
        looks = relooks()
        for path in pages():
            text = path.read_text(encoding="utf-8")
            rendered = render_verdicts(text, REPO, looks) if _VERDICT.search(text) else text
            if rendered != text:
                path.write_text(rendered, encoding="utf-8")
                print(f"rendered the verdict regions of {path.relative_to(REPO)}",
                      file=sys.stderr)
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
