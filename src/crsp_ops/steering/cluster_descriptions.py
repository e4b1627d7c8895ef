"""One-line, human- (and reflector-) readable descriptions of token clusters.

``cluster_descriptions.json`` maps each cluster id (a string, like the deltas' keys) to
``{"description": str, "size": int, "representative_tokens": [str, ...]}``. k-means clusters are
described from simple surface statistics of their members, because no LLM is assumed here.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsp_ops.steering.token_rules import (
    BPE_SPACE_MARKERS,
    EOS_CLUSTER,
    NUMERIC_CLUSTER,
    NUMERIC_SYMBOL_CHARS,
)

EOS_DESCRIPTION = "End of sequence / end of turn tokens (EOS/EOT): raising it ends answers sooner."
NUMERIC_DESCRIPTION = (
    "Digits, numbers, arithmetic and currency symbols ("
    + " ".join(sorted(NUMERIC_SYMBOL_CHARS))
    + ")."
)


def describe_cluster(
    cluster_id: int, member_texts: Sequence[str], representative_texts: Sequence[str]
) -> dict:
    """Return the ``cluster_descriptions.json`` entry of one cluster.

    Args:
        cluster_id: the cluster's id (0 and 1 get their fixed descriptions).
        member_texts: decoded text of every member token.
        representative_texts: the most representative members, best first.

    >>> describe_cluster(5, [" the", " and", " of"], [" the"])["description"]
    "k-means cluster: word-start tokens, alphabetic; e.g. ' the'"
    """
    if cluster_id == EOS_CLUSTER:
        description = EOS_DESCRIPTION
    elif cluster_id == NUMERIC_CLUSTER:
        description = NUMERIC_DESCRIPTION
    else:
        examples = ", ".join(repr(text) for text in representative_texts[:5])
        description = f"k-means cluster: {_surface_profile(member_texts)}; e.g. {examples}"
    return {
        "description": description,
        "size": len(member_texts),
        "representative_tokens": list(representative_texts),
    }


_PROFILE_TESTS = (
    ("word-start tokens", lambda t: t[:1].isspace() or t[:1] in BPE_SPACE_MARKERS),
    ("word-piece continuations", lambda t: t.startswith("##")),
    ("alphabetic", lambda t: _core(t).isalpha()),
    ("capitalised", lambda t: _core(t)[:1].isupper()),
    ("punctuation/symbols", lambda t: bool(_core(t)) and not any(c.isalnum() for c in _core(t))),
    ("whitespace/newlines", lambda t: bool(t) and t.isspace()),
    ("non-Latin script", lambda t: any(ord(c) > 0x24F and c.isalpha() for c in t)),
    ("byte fragments", lambda t: "\ufffd" in t),
    ("special/markup tokens", lambda t: t.startswith(("<", "[")) and t.endswith((">", "]"))),
)


def _core(text: str) -> str:
    return text.strip().removeprefix("##")


def _surface_profile(texts: Sequence[str]) -> str:
    """Name the surface traits shared by at least half of the texts ("mixed" if none)."""
    if not texts:
        return "empty"
    traits = [name for name, test in _PROFILE_TESTS if sum(map(test, texts)) * 2 >= len(texts)]
    return ", ".join(traits) if traits else "mixed"
