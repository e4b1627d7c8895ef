"""lab/CLAIMS.md from the claims registry: every number README.md, docs/*.md, docs/design/*.md
and examples/*/README.md quote, tied to the place that quotes it and the claim it comes from.

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
claim's result line (``check_outcomes``). A setting entry's ``settings`` bind its quotes to
the code's values (``lab/settings_values.py``), every setting quote of the design notes bound.

What counts as a number (``numbers_in``): a decimal (``0.499``, ``31.9``) or a percentage
(``26%``, ``0.3%``), thousands separators aside, in the prose. Not counted: integers (counts,
steps, seeds, sizes), anything in a fenced code block or an inline code span, link targets and
URLs, version-like ``x.y.z``, and a decimal glued to a letter or hyphen (``Qwen2.5``, ``0.5B``,
``SmolLM2-1.7B``).

The code, by job: ``registry.py`` (the registry and the records it reads),
``quoted_numbers.py`` (what a number is, where a quote sits, when it matches), ``places.py``
(quotes tied both ways), ``verdict_regions.py`` (verdict words and outcome prose),
``registry_edit.py`` (``--add``, ``--tie``, ``--prune``, ``--suggest``), ``settings_values.py``
(settings against the code); this module renders
the table and runs the checks.

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
import sys
from pathlib import Path

from lab.places import check_places, missing
from lab.quoted_numbers import VERDICT_REGION
from lab.registry import (
    CLAIMS_DIR,
    NOT_A_CLAIM,
    REGISTRY,
    REPO,
    RESULTS,
    SPLITS,
    TABLE,
    Claim,
    declared,
    load_claims,
    outcomes,
    pages,
    relooks,
)
from lab.registry_edit import add_entry, prune, suggest, tie
from lab.verdict_regions import render_verdicts


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
        "# Claims: every number README.md, docs/*.md, docs/design/*.md and "
        "examples/*/README.md quote", "",
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



def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """One action (``--write``, ``--check``, ``--prune``, ``--suggest``, ``--add``, ``--tie``);
    ``--add`` needs ``--split`` and ``--what``."""
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
    if args.add and (not args.split or not args.what):
        parser.error("--add needs --split and --what")
    return args


def add(args: argparse.Namespace) -> int:
    """``--add``: register the file's missing numbers in one registry line; 2 on a refusal."""
    try:
        line = add_entry(args.add, args.split, args.what,
                         [item.split("::", 1) for item in args.source], args.numbers,
                         claim=args.claim)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"added {json.dumps(line, ensure_ascii=False)}; now run --write", file=sys.stderr)
    return 0


def write_verdict_regions() -> None:
    """Render the verdict regions of every page that has one, in place."""
    looks = relooks()
    for path in pages():
        text = path.read_text(encoding="utf-8")
        rendered = render_verdicts(text, REPO, looks) if VERDICT_REGION.search(text) else text
        if rendered != text:
            path.write_text(rendered, encoding="utf-8")
            print(f"rendered the verdict regions of {path.relative_to(REPO)}",
                  file=sys.stderr)


def write_table(claims: list[Claim]) -> None:
    """Regenerate the table, atomically."""
    path = REPO / TABLE
    temp = path.with_suffix(".md.tmp")
    temp.write_text(render(claims), encoding="utf-8")
    temp.replace(path)
    print(f"wrote {TABLE}: {len(claims)} claims", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.add:
        return add(args)
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
        write_verdict_regions()
    missed = missing(claims)
    if args.write:
        write_table(claims)
    stale = (REPO / TABLE).read_text(encoding="utf-8") != render(claims) if (
        REPO / TABLE).exists() else True
    if missed or (args.check and stale):
        print(how_to_add(missed) if missed else f"{TABLE} is stale: run --write",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
