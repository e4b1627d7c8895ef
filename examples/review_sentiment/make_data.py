"""Write the example's data: short reviews to label positive or negative, in one word.

    python examples/review_sentiment/make_data.py      # train, dev, dev_former_test, test .jsonl

Each row has a chat ``prompt`` and the ``label`` the reward compares with. The three files come
from different seeds and share no review: dev is for choosing settings, test only for claimed
numbers.
"""

import json
import random
from pathlib import Path

SUBJECTS = ["the soup", "the hotel room", "the movie", "the service", "the train ride",
            "the concert", "this phone", "the new album", "the tour guide", "the pasta",
            "the museum", "the laptop", "the haircut", "the delivery", "the playground",
            "the coffee", "the hiking trail", "the book", "the repair shop", "the bakery"]
GOOD = ["was wonderful", "was excellent", "made my day", "was worth every penny",
        "exceeded my expectations", "was a real delight", "left me smiling",
        "was not bad at all", "could not have been better", "was lovely"]
BAD = ["was awful", "was a waste of money", "ruined my evening", "was terrible",
       "left me disappointed", "was not good at all", "could not have been worse",
       "was a real letdown", "was boring", "made me angry"]
OPENERS = ["Honestly, ", "Last week ", "I have to say ", "", "Overall, ", "To be fair, "]
ENDINGS = ["", " I would tell my friends.", " We went on a Sunday.", " It was my second visit.",
           " The price was as listed."]
ASK = ("Is this review positive or negative? Reply with exactly one word: positive or "
       "negative.\n\nReview: {review}")


def row(rng: random.Random) -> dict:
    """One review with its label, drawn from ``rng``."""
    label = rng.choice(["positive", "negative"])
    verdict = rng.choice(GOOD if label == "positive" else BAD)
    opener, subject = rng.choice(OPENERS), rng.choice(SUBJECTS)
    text = f"{opener}{subject} {verdict}."
    review = (text[0].upper() + text[1:]) + rng.choice(ENDINGS)
    return {"prompt": [{"role": "user", "content": ASK.format(review=review)}], "label": label}


def write(path: Path, count: int, seed: int, taken: set) -> None:
    """``count`` rows whose reviews are not in ``taken`` (which they join), as JSONL."""
    rng, rows = random.Random(seed), []
    while len(rows) < count:
        item = row(rng)
        text = item["prompt"][0]["content"]
        if text not in taken:
            taken.add(text)
            rows.append(item)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    here, taken = Path(__file__).parent, set()
    # the first test file (seed 2029): claims were made on it, so it is dev data now
    write(here / "dev_former_test.jsonl", 300, seed=2029, taken=taken)
    write(here / "dev.jsonl", 200, seed=10, taken=taken)
    write(here / "train.jsonl", 1000, seed=5, taken=taken)
    write(here / "test.jsonl", 300, seed=2039, taken=taken)  # fresh: shares no row above
