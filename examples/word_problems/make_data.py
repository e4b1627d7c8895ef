"""Write the example's data: one-step word problems whose answer is a whole number.

    python examples/word_problems/make_data.py      # train, dev, dev_former_test, test .jsonl

Each row has a chat ``prompt`` and the ``answer`` the reward compares with. The three files
come from different seeds and share no problem: dev is for choosing settings, test only for
claimed numbers.
"""

import json
import random
from pathlib import Path

NAMES = ["Ana", "Ben", "Carla", "Dev", "Emil", "Fatima", "Gus", "Hana", "Ian", "Julia", "Kofi",
         "Lina", "Milo", "Nora", "Owen", "Priya", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera"]
THINGS = ["apples", "stamps", "marbles", "books", "shells", "pencils", "cookies", "coins",
          "stickers", "cards", "plums", "buttons"]
TEMPLATES = [  # (text, answer from a and b)
    ("{n} has {a} {t} and gets {b} more. How many {t} does {n} have now?",
     lambda a, b: a + b),
    ("{n} had {a} {t} and gave {b} away. How many {t} are left?", lambda a, b: a - b),
    ("{n} buys {a} bags with {b} {t} in each. How many {t} is that in total?",
     lambda a, b: a * b),
    ("{n} puts {a} {t} into {b} equal piles. How many {t} are in each pile?",
     lambda a, b: a // b),
    ("There are {a} {t} on a table and {n} adds {b}. How many {t} are on the table?",
     lambda a, b: a + b),
]
INSTRUCTION = "Solve the problem. Reply with only the final number."


def row(rng: random.Random) -> dict:
    """One problem with its answer, drawn from ``rng``."""
    index = rng.randrange(len(TEMPLATES))
    text, answer = TEMPLATES[index]
    b = rng.randint(2, 9)
    if index == 1:
        a = rng.randint(b + 1, 30)
    elif index == 3:
        a = b * rng.randint(2, 9)
    else:
        a = rng.randint(2, 20)
    problem = text.format(n=rng.choice(NAMES), a=a, b=b, t=rng.choice(THINGS))
    prompt = [{"role": "user", "content": f"{INSTRUCTION}\n\n{problem}"}]
    return {"prompt": prompt, "answer": str(answer(a, b))}


def write(path: Path, count: int, seed: int, taken: set) -> None:
    """``count`` rows whose problems are not in ``taken`` (which they join), as JSONL."""
    rng, rows = random.Random(seed), []
    while len(rows) < count:
        item = row(rng)
        problem = item["prompt"][0]["content"]
        if problem not in taken:
            taken.add(problem)
            rows.append(item)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    here, taken = Path(__file__).parent, set()
    # the first test file (seed 2027): claims were made on it, so it is dev data now
    write(here / "dev_former_test.jsonl", 300, seed=2027, taken=taken)
    write(here / "dev.jsonl", 200, seed=8, taken=taken)
    write(here / "train.jsonl", 1000, seed=3, taken=taken)
    write(here / "test.jsonl", 300, seed=2037, taken=taken)  # fresh: shares no row above
