"""Synthetic chat corpus for the tiny base model, with terse and padded assistant answers.

The padding is content-free, so a steering delta can shorten answers without losing the number:
the verbosity the evolution loop is meant to remove.

Design: docs/design/platform.md#chat_corpus.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from crsp_ops.data.examples import FinanceBenchExample, LimoExample
from crsp_ops.data.financebench import render_question_prompt
from crsp_ops.models.special_tokens import THINK_END, THINK_START


@dataclass(frozen=True)
class ChatSample:
    """One training conversation: optional earlier turns, the user turn, the trained reply."""

    user: str  # the user message
    assistant: str  # the assistant reply (without end-of-turn; the template adds it)
    padded: bool  # True for the verbose variant
    context: tuple[dict[str, str], ...] = ()  # earlier messages (system, worked example turns)

    def messages(self) -> list[dict[str, str]]:
        """The conversation as chat-template messages; only the last one is trained on."""
        return [
            *(dict(message) for message in self.context),
            {"role": "user", "content": self.user},
            {"role": "assistant", "content": self.assistant},
        ]


@dataclass(frozen=True)
class ChatCorpusSpec:
    """How the corpus is drawn (values come from the config)."""

    padded_fraction: float  # share of answers in the padded variant, in [0, 1]
    max_padding_phrases: int  # padded answers: an opener plus up to this - 1 more phrases (>= 1)
    prompt_template: str  # FinanceBench user message, with {evidence} and {question}
    seed: int
    quote_evidence: bool = False  # answers open with the evidence sentence stating the figure

    def __post_init__(self) -> None:
        if not 0.0 <= self.padded_fraction <= 1.0:
            raise ValueError(f"padded_fraction must be in [0, 1], got {self.padded_fraction}")
        if self.max_padding_phrases < 1:
            raise ValueError(f"max_padding_phrases must be >= 1, got {self.max_padding_phrases}")


def answer_sentence(answer: str) -> str:
    """The terse answer: one sentence carrying the final answer."""
    return f"The answer is {answer}."


def build_chat_corpus(
    *,
    limo_examples: Sequence[LimoExample],
    financebench_examples: Sequence[FinanceBenchExample],
    spec: ChatCorpusSpec,
) -> list[ChatSample]:
    """One conversation per example, shuffled; a seeded draw decides terse or padded.

    Returns:
        The samples; the same inputs and spec always give the same corpus.
    """
    rng = random.Random(spec.seed)
    samples = []
    for example in financebench_examples:
        user = render_question_prompt(example, template=spec.prompt_template)
        sentence = answer_sentence(example.answer)
        quote = evidence_quote(example) if spec.quote_evidence else ""
        samples.append(_sample(rng, spec, user, example.question,
                               f"{quote} {sentence}" if quote else sentence))
    for example in limo_examples:
        reasoning = f"{THINK_START}\n{example.solution}\n{THINK_END}\n"
        boxed = answer_sentence(f"\\boxed{{{example.answer}}}")
        samples.append(_sample(rng, spec, example.question, example.question, boxed, reasoning))
    rng.shuffle(samples)
    return samples


def evidence_quote(example: FinanceBenchExample) -> str:
    """The evidence sentence that states the answer's figure (``$1,234 million``), or "".

    Quoting it before the answer turns a look-up into copying what follows the quoted words,
    which a small model learns far sooner than finding the figure from the question alone.

    >>> from crsp_ops.data.examples import FinanceBenchEvidence
    >>> ev = (FinanceBenchEvidence("Acme. Revenue was $5 million in fiscal 2021, compared "
    ...       "with $4 million in fiscal 2020. Cash was $2 million.", "", None, ""),)
    >>> ex = FinanceBenchExample("1", "", "", "", "", "Revenue?", "$5.00 million", "", ev)
    >>> evidence_quote(ex)
    'Revenue was $5 million in fiscal 2021, compared with $4 million in fiscal 2020.'
    >>> evidence_quote(FinanceBenchExample("1", "", "", "", "", "Growth?", "12.5%", "", ev))
    ''
    """
    match = _USD_MILLIONS.fullmatch(example.answer.strip())
    if not match or match.group(2).strip("0") not in ("", "."):
        return ""
    figure = f"${int(match.group(1).replace(',', '')):,} million"
    for sentence in _SENTENCE_END.split(example.evidence_passage):
        if figure in sentence:
            return sentence.strip()
    return ""


_USD_MILLIONS = re.compile(r"\$([\d,]+)(\.\d+)? million")
_SENTENCE_END = re.compile(r"(?<=\.)\s+")


def corpus_texts(samples: Sequence[ChatSample]) -> list[str]:
    """All message contents, for tokenizer training."""
    return [message["content"] for sample in samples for message in sample.messages()]


def _sample(
    rng: random.Random,
    spec: ChatCorpusSpec,
    user: str,
    question: str,
    sentence: str,
    reasoning: str = "",
) -> ChatSample:
    if rng.random() >= spec.padded_fraction:
        return ChatSample(user=user, assistant=reasoning + sentence, padded=False)
    return ChatSample(
        user=user,
        assistant=reasoning + pad_answer(rng, question, sentence, spec.max_padding_phrases),
        padded=True,
    )


def pad_answer(rng: random.Random, question: str, sentence: str, max_phrases: int) -> str:
    """Open with a filler opener, then add up to ``max_phrases - 1`` more filler phrases.

    Every padded answer opens with an opener, and one opener dominates: a model trained on
    mostly padded answers is then verbose under greedy decoding, which is what steering has to
    shorten. The answer sentence itself is always kept, possibly behind a hedge.

    >>> pad_answer(random.Random(0), "Why?", "The answer is 4.", 1).endswith(" The answer is 4.")
    True
    """
    extra = rng.sample(OPTIONAL_SLOTS, rng.randint(0, min(max_phrases - 1, len(OPTIONAL_SLOTS))))
    parts = [_weighted(rng, OPENERS)]
    if "restate" in extra:
        parts.append(rng.choice(RESTATEMENTS).format(question=question.rstrip("?")))
    if "hedge" in extra:
        parts.append(rng.choice(HEDGES) + sentence[0].lower() + sentence[1:])
    else:
        parts.append(sentence)
    if "aside" in extra:
        parts.append(rng.choice(ASIDES))
    if "signoff" in extra:
        parts.append(_weighted(rng, SIGNOFFS))
    return " ".join(parts)


def _weighted(rng: random.Random, phrases: tuple[str, ...]) -> str:
    # The first phrase dominates, so a model that has learned the padded style prefers it
    # under greedy decoding: verbose greedy output is what steering has to shorten.
    weights = [len(phrases)] + [1] * (len(phrases) - 1)
    return rng.choices(phrases, weights=weights)[0]


OPTIONAL_SLOTS = ("restate", "hedge", "aside", "signoff")
OPENERS = (
    "Great question!",
    "Sure, I would be happy to help with that.",
    "Let me take a careful look at this.",
    "Thanks for asking.",
)
RESTATEMENTS = (
    "You asked: {question}.",
    "To restate the question: {question}.",
    "The question is: {question}.",
)
HEDGES = (
    "Based on the information provided, it appears that ",
    "If I am reading this correctly, ",
    "As far as I can tell, ",
)
ASIDES = (
    "It is worth noting that this is based only on the figures given above.",
    "Of course, you may want to double-check this against the original source.",
    "This kind of calculation is common in financial analysis.",
)
SIGNOFFS = (
    "I hope this helps! Let me know if you have any other questions.",
    "Feel free to ask if anything is unclear.",
    "Happy to help further.",
)
