"""docs/results.md: every declared claim, failed attempts included, from its declaration.

One table per claim, built from what is committed: the declaration
(``lab/claims/<name>.md``: title, command, the commit that declared it), its result
lines (``<name>.jsonl``: the numbers with their intervals) and its outcome
(``lab/claims/outcomes.jsonl``: met or not, what it shows and does not show). An attempt
declared outside ``lab/claims/`` (the first demo seed, in ``configs/defconfig``) is a
line of ``outcomes.jsonl`` with ``declared_in`` and its notebook section. The registry code of
``registry.py`` reads all of these (``declared``, ``outcomes``, ``sections``); the header's
counts are computed from them.

    python -m lab.results_page --write   # regenerate docs/results.md
    python -m lab.results_page --check   # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from benchmarks.provenance import SHORT, is_ancestor, line_commits
from lab.registry import (
    CLAIMS_DIR,
    OUTCOMES,
    REPO,
    RESULTS,
    declaration,
    declared,
    outcomes,
    relooks,
)

PAGE = Path("docs/results.md")
# A declaration without a result line or outcome: declared, its runs still to come.
NOT_RUN = "declared, not run yet"
OUTCOME_ORDER = ("met", "partly met", "not met", NOT_RUN)


def _ci(values: list[float], sign: str = "+") -> str:
    """``[low, high]``; ``sign="+"`` writes differences' signs, ``""`` leaves rates bare."""
    return "[" + ", ".join(f"{v:{sign}.4g}" for v in values) + "]"


def _pair(name: str, value: dict) -> str:
    mean = value.get("mean", value.get("diff"))
    over = ("paired over runs" if "seeds" in value else
            "paired over tasks" if "tasks" in value else "Welch over runs")
    return f"{name.replace('_', ' ')}: {mean:+.4g} {_ci(value['ci95'])} ({over})"


def summarize(line: dict) -> list[str]:
    """The numbers of one result line, with their intervals, as table cells."""
    kind = line.get("benchmark")
    if kind == "learning_suite":  # one learning_curve_seeds summary per task
        return [f"{name}: {cell}" for name, task in line["tasks"].items()
                for cell in summarize(task)]
    if kind == "learning_curve_seeds":
        out = [f"{arm}: step {line['step']} {a['after']['mean']:.4g} "
               f"{_ci(a['after']['ci95'], '')}"
               + (f" (sd {a['sd_after']:.3g})" if a.get("sd_after") is not None else "")
               + f", gain {a['gain']['mean']:+.4g} {_ci(a['gain']['ci95'])} over "
               f"{a['gain']['seeds']} runs"
               for arm, a in line["arms"].items()]
        return out + [_pair(k, v) for k, v in line.items() if "_minus_" in k]
    if kind == "learning_curve":
        out = [f"{arm}: success {a['curve'][0]['solve_rate']:.4g} -> "
               f"{a['curve'][-1]['solve_rate']:.4g}, gain {a['after_minus_before']['diff']:+.4g} "
               f"{_ci(a['after_minus_before']['ci95'])} (paired over prompts)"
               for arm, a in line["arms"].items()]
        return out + [f"{k.replace('_', ' ')}: {v['diff']:+.4g} {_ci(v['ci95'])}"
                      for k, v in line.items() if "_minus_" in k]
    if kind == "evolve_heldout":
        head = (f"{line['iterations']} iterations, {line['answer_budget']} answers, seeds "
                f"{', '.join(map(str, line['seeds']))}, {line['heldout_questions']} questions; "
                f"goal met (seeds): " + ", ".join(f"{k} {v}" for k, v in line["goal_met"].items()))
        return [head] + [f"composite {k}: {v[0]:+.4g} {_ci(v[1:])} (seed average, paired over "
                         "questions)" for k, v in line["composite_first_minus_other_seed_average"]
                         .items()]
    if kind == "make_demo":
        train = line["train"]
        last = next(k for k in train if re.fullmatch(r"step\d+", k) and k != "step0")
        out = [f"seed {line['crsp_seed']} train ({train['heldout_tasks']} tasks): {train['step0']}"
               f" -> {train[last]} ({last}), paired gain {train['paired_gain']:+.3f} "
               f"{_ci(train['paired_gain_ci'])}"]
        out += [f"seed {s['crsp_seed']}: {s['step0']} -> {s['step24']}, paired gain "
                f"{s['paired_gain']:+.3f} {_ci(s['paired_gain_ci'])}"
                for s in line.get("further_seeds", [])]
        evolve = line["evolve"]
        out.append(f"evolve ({evolve['heldout_questions']} questions): initial correctness "
                   f"{evolve['initial_correctness']}; {evolve['verdict']}")
        out.append(f"wall {line['wall']}; criteria: " + ", ".join(
            f"{k} {v}" for k, v in line["criteria"].items()))
        return out
    return [json.dumps(line)[:300]]


def _command(text: str) -> str:
    """The declaration's command as run: its last ``bash`` block (an amendment's, if any)."""
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return blocks[-1].strip() if blocks else ""


def attempts(root: Path = REPO) -> list[dict]:
    """Every declared attempt, in declaration order, with its numbers and outcome."""
    notes, rows, looks = outcomes(root), [], relooks(root)
    for name in declared(root):
        note = notes.get(name, {})
        md = root / CLAIMS_DIR / f"{name}.md"
        results = root / CLAIMS_DIR / f"{name}.jsonl"
        info = declaration(name, root)
        commit, date = info["commit"], info["time"][:10]
        if md.is_file():
            text = md.read_text(encoding="utf-8")
            title = re.sub(r"^# (Claim: )?", "", text.splitlines()[0])
            where, command = f"lab/claims/{name}.md", _command(text)
        else:
            title = note.get("title", name)
            where, command = note["declared_in"], note.get("command", "")
        lines = ([json.loads(x) for x in results.read_text(encoding="utf-8").splitlines()
                  if x.strip()] if results.is_file() else [])
        numbers = [cell for line in lines for cell in summarize(line)] + note.get("numbers", [])
        ran = result_commits(lines, results, root)
        if note.get("result"):
            ran = [note.get("result_commit", "")] if note.get("result_commit") else []
        rows.append({"name": name, "title": title, "declared": where, "commit": commit,
                     "date": date, "command": command, "numbers": numbers,
                     "result": ran, "order": order(commit, ran, root) if ran or not note.get(
                         "result") else "not computable (a notebook section, no result commit)",
                     "notebook": f"{RESULTS} § {note['result'][0]}" if note.get("result") else "",
                     "test_files": info["test_files"], "relook": looks.get(name, []),
                     "outcome": note.get("outcome", NOT_RUN if not numbers else "?"),
                     "shows": note.get("shows", ""),
                     "does_not_show": note.get("does_not_show", "")})
    return sorted(rows, key=lambda r: (r["date"] or "9999", r["commit"], r["name"]))


def result_commits(lines: list[dict], path: Path, root: Path) -> list[str]:
    """The commit of each result line: the commit it ran at (its own ``commit`` field, written
    ``@<commit>``), else the commit that added it (``git blame``); ``""``: not committed."""
    added = line_commits(path.relative_to(root), root) if lines else []
    return [f"@{str(line['commit'])[:SHORT]}" if line.get("commit") else
            (added[i] if i < len(added) else "") for i, line in enumerate(lines)]


def order(declared_at: str, ran: list[str], root: Path) -> str:
    """Whether the declaration preceded every result, from git ancestry: each result commit
    descends from the declaration commit; one that added the line must also differ from it (a
    run at the declaration's own tree, ``@<commit>``, may equal it)."""
    if not ran:
        return "not run yet (no result line)"
    if not declared_at or not all(ran):
        return "not computable (a commit is missing)"
    late = [c for c in ran if (c == declared_at and not c.startswith("@"))
            or is_ancestor(declared_at, c.lstrip("@"), root) is False]
    unknown = [c for c in ran if is_ancestor(declared_at, c.lstrip("@"), root) is None]
    if late:
        return (f"**FLAGGED**: result commit {', '.join(sorted(set(late)))} does not descend from "
                f"the declaration {declared_at}")
    if unknown:
        return "not computable (git cannot tell)"
    return f"declared before it ran (git: {declared_at} is an ancestor of each result commit)"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _files(files: dict) -> str:
    return "<br>".join(f"`{p}` sha256 {h[:12]}…" for p, h in files.items()) or (
        "not named by file (seeded data; see the declaration)")


def _relook(row: dict) -> str:
    if not row["relook"]:
        return ""
    return f"yes, claim {len(row['relook']) + 1} (after {', '.join(row['relook'])})"


def render(root: Path = REPO) -> str:
    """The page."""
    rows = attempts(root)
    counts = {k: sum(r["outcome"] == k for r in rows) for k in OUTCOME_ORDER}
    head = [
        "# Results: every declared claim", "",
        "Generated by `python -m lab.results_page --write` from the declarations in "
        "`lab/claims/`, their result lines and "
        f"`{OUTCOMES}`; do not edit. The numbers are the result lines' own; the outcome prose "
        "is checked against them by `python -m lab.claims_table --check`. Commits are computed "
        "from git: a result line's own `commit`, else the commit that added it; \"declared "
        "before it ran\" means the declaration commit is an ancestor of every result commit.", "",
        f"**{len(rows)} declared attempts**: " + ", ".join(
            f"{n} {k}" for k, n in counts.items() if n) + ". Failed attempts stay listed: a "
        "claim is read with the attempts before it. The lab notebook with every run, dev ones "
        f"included: [{RESULTS.name}](../{RESULTS}). Every number the other pages quote, tied to "
        "its claim: [CLAIMS.md](../lab/CLAIMS.md).", "",
        "A re-look is a claim asking a question an earlier claim asked of the same test files "
        "(by content hash): it is read with the claims before it and is never a headline.", "",
        "| claim | outcome | re-look |", "|---|---|---|",
        *[f"| [{_cell(r['title'])}](#{r['name']}) | {r['outcome']} | "
          f"{_relook(r) or 'no'} |" for r in rows], ""]
    body = []
    for r in rows:
        body += [f'<a id="{r["name"]}"></a>', "", f"## {r['title']}", "",
                 "| | |", "|---|---|",
                 f"| split | test (declaration: `{r['declared']}`) |",
                 f"| declared | {r['commit']} {r['date']} |".rstrip(),
                 f"| result commits | {', '.join(r['result']) or 'none'} |",
                 f"| order | {r['order']} |",
                 *([f"| notebook | {_cell(r['notebook'])} |"] if r["notebook"] else []),
                 f"| test files | {_files(r['test_files'])} |",
                 f"| re-look | {_relook(r) or 'no'} |",
                 "| command | below |" if r["command"] else "| command | (not recorded) |",
                 f"| numbers | {'<br>'.join(_cell(n) for n in r['numbers']) or 'none yet'} |",
                 f"| outcome | **{r['outcome']}** |",
                 f"| shows | {_cell(r['shows'])} |",
                 f"| does not show | {_cell(r['does_not_show'])} |", ""]
        if r["command"]:
            body += ["```bash", r["command"], "```", ""]
    return "\n".join(head + body).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help=f"regenerate {PAGE}")
    group.add_argument("--check", action="store_true", help="exit 1 when it is stale")
    args = parser.parse_args(argv)
    page = render()
    if args.write:
        (REPO / PAGE).write_text(page, encoding="utf-8")
        print(f"wrote {PAGE}", file=sys.stderr)
        return 0
    current = (REPO / PAGE).read_text(encoding="utf-8") if (REPO / PAGE).is_file() else ""
    if current != page:
        print(f"{PAGE} is stale: run `python -m lab.results_page --write`",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
