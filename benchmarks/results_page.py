"""docs/results.md: every declared claim, failed attempts included, from its declaration.

One table per claim, built from what is committed: the declaration
(``benchmarks/claims/<name>.md``: title, command, the commit that declared it), its result lines
(``<name>.jsonl``: the numbers with their intervals) and its outcome
(``benchmarks/claims/outcomes.jsonl``: met or not, what it shows and does not show). An attempt
declared outside ``benchmarks/claims/`` (the first demo seed, in ``configs/defconfig``) is a
line of ``outcomes.jsonl`` with ``declared_in`` and its notebook section. The registry code of
``claims_table.py`` reads all of these (``declared``, ``outcomes``, ``sections``); the header's
counts are computed from them.

    python benchmarks/results_page.py --write   # regenerate docs/results.md
    python benchmarks/results_page.py --check   # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.claims_table import CLAIMS_DIR, OUTCOMES, REPO, RESULTS, declared, outcomes

PAGE = Path("docs/results.md")
OUTCOME_ORDER = ("met", "partly met", "not met", "no result yet")


def _added(path: Path, root: Path) -> tuple[str, str]:
    """(short commit, date) of the commit that added ``path``; empty outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%h %ad", "--date=short", "--", str(path)],
            cwd=root, capture_output=True, text=True, check=False).stdout.split()
    except OSError:
        return "", ""
    return (out[-2], out[-1]) if len(out) >= 2 else ("", "")


def _date(commit: str, root: Path) -> str:
    """The date of ``commit``; empty outside a git checkout."""
    try:
        return subprocess.run(["git", "show", "-s", "--format=%ad", "--date=short", commit],
                              cwd=root, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


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
    notes, rows = outcomes(root), []
    for name in declared(root):
        note = notes.get(name, {})
        md = root / CLAIMS_DIR / f"{name}.md"
        results = root / CLAIMS_DIR / f"{name}.jsonl"
        if md.is_file():
            text = md.read_text(encoding="utf-8")
            title = re.sub(r"^# (Claim: )?", "", text.splitlines()[0])
            commit, date = _added(md.relative_to(root), root)
            where, command = f"benchmarks/claims/{name}.md", _command(text)
        else:
            title, commit = note.get("title", name), note.get("declared_commit", "")
            date = _date(commit, root)
            where, command = note["declared_in"], note.get("command", "")
        lines = ([json.loads(x) for x in results.read_text(encoding="utf-8").splitlines()
                  if x.strip()] if results.is_file() else [])
        numbers = [cell for line in lines for cell in summarize(line)] + note.get("numbers", [])
        result_commit = ", ".join(sorted({x["commit"] for x in lines if "commit" in x}))
        if lines and not result_commit:
            result_commit = " ".join(_added(results.relative_to(root), root))
        if note.get("result"):
            result_commit = f"{RESULTS} § {note['result'][0]}"
        rows.append({"name": name, "title": title, "declared": where, "commit": commit,
                     "date": date, "command": command, "numbers": numbers,
                     "result": result_commit,
                     "outcome": note.get("outcome", "no result yet" if not numbers else "?"),
                     "shows": note.get("shows", ""),
                     "does_not_show": note.get("does_not_show", "")})
    return sorted(rows, key=lambda r: (r["date"] or "9999", r["commit"], r["name"]))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render(root: Path = REPO) -> str:
    """The page."""
    rows = attempts(root)
    counts = {k: sum(r["outcome"] == k for r in rows) for k in OUTCOME_ORDER}
    head = [
        "# Results: every declared claim", "",
        "Generated by `python benchmarks/results_page.py --write` from the declarations in "
        "`benchmarks/claims/` (each committed before its run), their result lines and "
        f"`{OUTCOMES}`; do not edit. Every number here is a result line's own.", "",
        f"**{len(rows)} declared attempts**: " + ", ".join(
            f"{n} {k}" for k, n in counts.items() if n) + ". Failed attempts stay listed: a "
        "claim is read with the attempts before it. The lab notebook with every run, dev ones "
        f"included: [{RESULTS.name}](../{RESULTS}). Every number the other pages quote, tied to "
        "its claim: [CLAIMS.md](../benchmarks/CLAIMS.md).", "",
        "| claim | outcome |", "|---|---|",
        *[f"| [{_cell(r['title'])}](#{r['name']}) | {r['outcome']} |" for r in rows], ""]
    body = []
    for r in rows:
        body += [f'<a id="{r["name"]}"></a>', "", f"## {r['title']}", "",
                 "| | |", "|---|---|",
                 f"| split | test (declared before it ran: `{r['declared']}`) |",
                 f"| declared | {r['commit']} {r['date']} |".rstrip(),
                 "| command | below |" if r["command"] else "| command | (not recorded) |",
                 f"| result | {_cell(r['result'])} |",
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
        print(f"{PAGE} is stale: run `python benchmarks/results_page.py --write`",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
