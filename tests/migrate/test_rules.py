"""Rules, boundaries and protections on single strings."""

from __future__ import annotations

import re

import pytest

from crsp_ops.migrate.protect import (
    CITATION_REASON,
    HUB_ID_REASON,
    URL_REASON,
    find_protections,
)
from crsp_ops.migrate.rewrite import IN_WORD_REASON, UNMAPPED_REASON, rewrite_text
from crsp_ops.migrate.rules import (
    DEFAULT_RULES,
    at_identifier_boundary,
    parse_rule,
    with_additions,
)


def migrate(
    text: str, keep: tuple[str, ...] = (), dirs: tuple[str, ...] = (), rules: tuple[str, ...] = ()
):
    protections = find_protections(text, [re.compile(k) for k in keep], dirs)
    added = with_additions(DEFAULT_RULES, [parse_rule(spec) for spec in rules])
    return rewrite_text(text, added, protections)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("main_azr_ppo.py", "main_crsp_ppo.py"),
        ("from absolute_zero_reasoner.utils import x", "from rewarded_self_play.utils import x"),
        ("AZR_HOME=1", "CRSP_HOME=1"),
        ("AZRTrainer()", "CRSPTrainer()"),
        ("azrConfig", "crspConfig"),
        ("runAZR", "runCRSP"),
        ("config.azr.seed=${azr.seed}", "config.crsp.seed=${crsp.seed}"),
        ("azr-7b", "crsp-7b"),
        ("The absolute zero reasoner.", "The Cognition via Rewarded Self-Play."),
    ],
)
def test_rules_rewrite_identifier_segments(before: str, after: str) -> None:
    assert migrate(before).text == after


@pytest.mark.parametrize(
    ("before", "rule", "after"),
    [
        ("class AzrRayTrainer:", "Azr=Crsp", "class CrspRayTrainer:"),
        ("ABSOLUTE_ZERO_REASONER_HOME", "ABSOLUTE_ZERO_REASONER=REWARDED_SELF_PLAY",
         "REWARDED_SELF_PLAY_HOME"),
        ("class AbsoluteZeroReasoner:", "AbsoluteZeroReasoner=RewardedSelfPlay",
         "class RewardedSelfPlay:"),
    ],
)
def test_variants_outside_the_seed_need_a_rule(before: str, rule: str, after: str) -> None:
    left = migrate(before)
    assert left.text == before
    assert [leftover.reason for leftover in left.leftovers] == [UNMAPPED_REASON]
    assert migrate(before, rules=(rule,)).text == after


def test_longest_rule_wins_and_counts_once() -> None:
    result = migrate("import absolute_zero_reasoner.azr_utils")
    assert result.text == "import rewarded_self_play.crsp_utils"
    assert result.counts == {"absolute_zero_reasoner -> rewarded_self_play": 1, "azr -> crsp": 1}


@pytest.mark.parametrize("word", ["hazrat", "HAZRAT", "Azrael", "AZRs", "lazr"])
def test_in_word_hits_are_reported_not_rewritten(word: str) -> None:
    result = migrate(f"x = {word}\n")
    assert result.text == f"x = {word}\n"
    assert [leftover.reason for leftover in result.leftovers] == [IN_WORD_REASON]


def test_unmapped_spelling_is_reported() -> None:
    result = migrate("clone Absolute-Zero-Reasoner and aZr\n")
    assert result.text == "clone Absolute-Zero-Reasoner and aZr\n"
    assert [(x.text, x.reason) for x in result.leftovers] == [
        ("Absolute-Zero-Reasoner", UNMAPPED_REASON),
        ("aZr", UNMAPPED_REASON),
    ]


def test_wrapped_prose_keeps_its_line_break() -> None:
    assert migrate("The Absolute Zero\n  Reasoner wins").text == (
        "The Cognition via Rewarded\n  Self-Play wins"
    )
    # A blank line separates paragraphs: never joined into one name.
    assert migrate("Absolute Zero\n\nReasoner").text == "Absolute Zero\n\nReasoner"


def test_boundary_function_directly() -> None:
    assert at_identifier_boundary("x AZR y", 2, 5)
    assert not at_identifier_boundary("LAZR", 1, 4)


def test_url_and_hub_id_are_protected_but_paths_are_not() -> None:
    text = (
        "model=andrewzh/Absolute_Zero_Reasoner-Coder-7b "
        "see https://wandb.ai/u/azr-logs and huggingface.co/org/azr-7b "
        "edit configs/azr_ppo_trainer.yaml or outputs/azr_run or absolute_zero_reasoner/x\n"
    )
    result = migrate(text, dirs=("configs",))
    assert "andrewzh/Absolute_Zero_Reasoner-Coder-7b" in result.text
    assert "https://wandb.ai/u/azr-logs" in result.text
    assert "huggingface.co/org/azr-7b" in result.text
    assert "configs/crsp_ppo_trainer.yaml" in result.text
    assert "outputs/crsp_run" in result.text
    assert "rewarded_self_play/x" in result.text
    reasons = {leftover.reason for leftover in result.leftovers}
    assert reasons == {HUB_ID_REASON, URL_REASON}


def test_two_segment_name_under_a_tree_directory_is_a_path() -> None:
    assert migrate("models/azr-7B", dirs=("models",)).text == "models/crsp-7B"
    assert migrate("models/azr-7B").text == "models/azr-7B"


def test_citations_are_protected() -> None:
    text = "As shown \\cite{azr2025} and [@azr2025].\n@misc{azr2025,\n title={AZR}\n}\nAZR.\n"
    result = migrate(text)
    assert result.text == text.replace("AZR.\n", "CRSP.\n")
    assert {x.reason for x in result.leftovers} == {CITATION_REASON}


def test_python_decorator_is_not_a_citation() -> None:
    assert migrate("@azr_task\ndef f(): ...\n").text == "@crsp_task\ndef f(): ...\n"


def test_keep_pattern_protects_its_matches() -> None:
    result = migrate("AZR_LEGACY = AZR_NEW\n", keep=(r"AZR_LEGACY",))
    assert result.text == "AZR_LEGACY = CRSP_NEW\n"
    assert result.leftovers[0].reason == "--keep 'AZR_LEGACY'"


def test_base64_blob_is_protected() -> None:
    blob = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwG9azr9" * 2
    assert migrate(f'"image/png": "{blob}"').text == f'"image/png": "{blob}"'


def test_text_without_old_names_is_returned_unchanged() -> None:
    result = migrate("crsp already\n")
    assert (result.text, result.counts, result.leftovers) == ("crsp already\n", {}, ())
