"""Settings quoted on the pages are bound to the code's values (``lab/settings_values.py``):
a default changed in the code fails the check until the page says the new value."""

from __future__ import annotations

import json

import pytest

from lab.registry import REGISTRY, Claim, load_claims
from lab.registry_edit import prune, tie
from lab.settings_values import check_settings, code_value, states

PAGE = "docs/design/trainer.md"


def entry(settings, quotes=((PAGE, "ratio clip", "0.2"), (PAGE, "wrong gets", "-0.5")),
          split="not a claim: setting (clip, reward)"):
    numbers = tuple(sorted({q[2] for q in quotes}))
    return Claim((PAGE,), numbers, split, "w", (), "", "", "", line=7, quotes=tuple(quotes),
                 settings=tuple(settings))


BOTH = (("ratio clip", "0.2", "config:train.ratio_clip"),
        ("wrong gets", "-0.5", "python:crsp_ops.crsp.rewards.formulas:WRONG_REWARD"))


def test_the_code_values_are_read_from_kconfig_and_modules():
    assert code_value("config:train.ratio_clip") == "0.2"
    assert code_value("python:crsp_ops.crsp.rewards.alpha_schedule:RLSP_MID.alpha_c") == 0.6
    assert code_value("python:crsp_ops.crsp.rewards.alpha_schedule:PHASE_BREAKS[1]") == 0.6
    for bad in ("config:train.nothing", "yaml:x", "python:crsp_ops.crsp.rewards.formulas"):
        with pytest.raises(LookupError):
            code_value(bad)


def test_a_quote_states_its_value_exactly_with_its_sign():
    assert states("0.2", "0.2") and states("0.20", 0.2) and states("40%", 0.4)
    assert states("95%", 95) and states("-0.5", -0.5) and states("+0.5", 0.5)
    assert not states("0.2", 0.21) and not states("-0.5", 0.5) and not states("0.5", -0.5)
    assert not states("4%", 0.4)


def test_bound_quotes_that_state_the_code_value_pass():
    assert check_settings([entry(BOTH)]) == []


def test_a_changed_code_default_fails_naming_page_quote_and_target():
    values = {"config:train.ratio_clip": "0.25",
              "python:crsp_ops.crsp.rewards.formulas:WRONG_REWARD": -0.5}
    assert check_settings([entry(BOTH)], value_of=values.__getitem__) == [
        f"{PAGE}: 0.2 after 'ratio clip' says config:train.ratio_clip is 0.2, the code has 0.25"]


def test_a_binding_to_no_quote_and_an_unknown_target_fail():
    found = check_settings([entry([("clip is", "0.2", "config:train.ratio_clip"),
                                   ("wrong gets", "-0.5", "config:train.nowhere"),
                                   BOTH[0]])])
    assert found[0] == f"{REGISTRY}:7: setting 0.2 after 'clip is' is none of the entry's quotes"
    assert found[1].startswith(f"{REGISTRY}:7: config:train.nowhere: ")
    assert len(found) == 2


def test_an_unbound_setting_fails_on_a_design_note_only():
    found = check_settings([entry(BOTH[:1])])
    assert found == [f"{PAGE}: setting -0.5 after 'wrong gets' is not bound to the code's value "
                     f"(\"settings\" in {REGISTRY}:7)"]
    elsewhere = [("docs/engines.md", "ratio clip", "0.2")]
    assert check_settings([Claim(("docs/engines.md",), ("0.2",), "not a claim: setting (x)",
                                 "w", (), "", "", "", line=3, quotes=tuple(elsewhere))]) == []
    assert check_settings([entry([], split="not a claim: example (x)")]) == []


@pytest.fixture
def design_repo(tmp_path):
    """A repository with one design note quoting one setting, bound to its code value."""
    (tmp_path / "lab/claims").mkdir(parents=True)
    (tmp_path / "lab/notebook").mkdir(parents=True)
    (tmp_path / "lab/notebook/RESULTS.md").write_text("", encoding="utf-8")
    (tmp_path / "docs/design").mkdir(parents=True)
    (tmp_path / "README.md").write_text("", encoding="utf-8")
    (tmp_path / PAGE).write_text("The ratio clip is 0.2 here.\n", encoding="utf-8")
    line = {"files": [PAGE], "numbers": ["0.2"], "split": "not a claim: setting (clip)",
            "what": "clip", "quotes": [[PAGE, "The ratio clip is", "0.2"]],
            "settings": [["The ratio clip is", "0.2", "config:train.ratio_clip"]]}
    (tmp_path / REGISTRY).write_text(json.dumps(line) + "\n", encoding="utf-8")
    return tmp_path


def test_tie_moves_a_binding_with_its_quote(design_repo):
    (design_repo / PAGE).write_text("The clip of the ratio is 0.2 here.\n", encoding="utf-8")
    assert tie(PAGE, design_repo) == 1
    (claim,) = load_claims(design_repo)
    assert claim.settings == (("The clip of the ratio is", "0.2", "config:train.ratio_clip"),)
    assert check_settings([claim]) == []


def test_prune_drops_the_binding_of_a_quote_no_page_holds(design_repo):
    line = json.loads((design_repo / REGISTRY).read_text(encoding="utf-8"))
    wrong = ["Wrong gets", "-0.5", "python:crsp_ops.crsp.rewards.formulas:WRONG_REWARD"]
    line["numbers"].append("-0.5")
    line["quotes"].append([PAGE, *wrong[:2]])
    line["settings"].append(wrong)
    (design_repo / REGISTRY).write_text(json.dumps(line) + "\n", encoding="utf-8")
    (design_repo / PAGE).write_text("The ratio clip is set in Kconfig.\nWrong gets -0.5.\n",
                                    encoding="utf-8")
    assert prune(design_repo) == 1
    (claim,) = load_claims(design_repo)
    assert claim.settings == (tuple(wrong),) and claim.numbers == ("-0.5",)
    assert check_settings([claim]) == []
