"""Write the example's data: short notes about a person, and the JSON fields to extract.

    python examples/json_extraction/make_data.py   # train, dev, dev_former_test, test .jsonl

Each row has a chat ``prompt`` and the two truths the reward reads (``name``, ``city``). The
three files come from different seeds and share no note: dev is for choosing settings, test is
only for the claimed before/after numbers.
"""

import json
import random
from pathlib import Path

FIRST = ["Maria", "Tom", "Aisha", "Kenji", "Lena", "Omar", "Sofia", "Ivan", "Chloe", "Ravi",
         "Elena", "Marco", "Nina", "Pedro", "Yuki", "Hannah", "Ahmed", "Clara", "Jonas", "Mei",
         "Lucas", "Zara", "Felix", "Ines", "Tariq", "Greta", "Diego", "Leila", "Oscar", "Amara"]
LAST = ["Lopez", "Becker", "Khan", "Sato", "Novak", "Haddad", "Rossi", "Petrov", "Martin",
        "Patel", "Garcia", "Weber", "Ivanova", "Silva", "Tanaka", "Schmidt", "Ali", "Moreau",
        "Berg", "Chen", "Dubois", "Okafor", "Larsen", "Costa", "Nasser", "Fischer", "Ortiz"]
CITIES = ["Lyon", "Oslo", "Porto", "Kyoto", "Leeds", "Tunis", "Graz", "Quito", "Perth", "Turin",
          "Cork", "Riga", "Lima", "Basel", "Dakar", "Hanoi", "Split", "Malmo", "Bergen", "Nice"]
JOBS = ["nurse", "baker", "pilot", "teacher", "chemist", "carpenter", "lawyer", "farmer",
        "architect", "librarian", "welder", "dentist"]
TEMPLATES = [
    "{name}, {age}, works as a {job} in {city}.",
    "After years abroad, {name} settled in {city}, where the {job} now runs a small shop.",
    "Our new {job}, {name}, commutes every day from {city}.",
    "Born in {city}, {name} became a {job} at the age of {age}.",
    "The {job} {name} ({age}) was interviewed last week in {city}.",
    "In {city}, {name} is known as the best {job} in town.",
]
INSTRUCTION = ('Extract the person\'s full name and the city from the note. Reply with only a '
               'JSON object: {"name": "...", "city": "..."}')


def row(rng: random.Random) -> dict:
    """One note with its truths, drawn from ``rng``."""
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    city = rng.choice(CITIES)
    note = rng.choice(TEMPLATES).format(name=name, city=city, job=rng.choice(JOBS),
                                        age=rng.randint(21, 70))
    prompt = [{"role": "user", "content": f"{INSTRUCTION}\n\nNote: {note}"}]
    return {"prompt": prompt, "name": name, "city": city}


def write(path: Path, count: int, seed: int, taken: set) -> None:
    """``count`` rows whose notes are not in ``taken`` (which they join), as JSONL."""
    rng, rows = random.Random(seed), []
    while len(rows) < count:
        item = row(rng)
        note = item["prompt"][0]["content"]
        if note not in taken:
            taken.add(note)
            rows.append(item)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    here, taken = Path(__file__).parent, set()
    # the first test file (seed 2026): claims were made on it, so it is dev data now
    write(here / "dev_former_test.jsonl", 250, seed=2026, taken=taken)
    write(here / "dev.jsonl", 60, seed=7, taken=taken)
    write(here / "train.jsonl", 600, seed=1, taken=taken)
    write(here / "test.jsonl", 250, seed=2036, taken=taken)  # fresh: shares no row above
