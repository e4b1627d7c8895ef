"""Built-in starter tasks: small deterministic programs per code type and a few math problems.

The outputs are the ``repr`` the sandbox produces (``tests/crsp`` re-runs every program through
the real sandbox to keep them honest). They fill the task buffers before any proposal exists.
"""

from __future__ import annotations

from crsp_ops.crsp.tasks.task_types import CodeTask, MathTask, TaskType

_TOP3 = "def f(xs):\n    return sorted(xs, reverse=True)[:3]\n"
_SHOUT = "def f(s):\n    return s[::-1].upper()\n"
_FIB = ("def f(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
        "    return a\n")
_WINDOWS = ("def f(xs, k):\n    return [sum(xs[i:i + k]) for i in range(len(xs) - k + 1)]\n")
_COUNTS = ("def f(text):\n    counts = {}\n    for ch in text:\n        if ch.isalpha():\n"
           "            counts[ch] = counts.get(ch, 0) + 1\n"
           "    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:2]\n")
_GCD = ("def f(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n")
_RUNS = ("def f(xs):\n    out = []\n    for x in xs:\n        if out and out[-1][0] == x:\n"
         "            out[-1] = (x, out[-1][1] + 1)\n        else:\n"
         "            out.append((x, 1))\n    return out\n")

STARTER_CODE_O = (
    CodeTask(TaskType.CODE_O, _TOP3, ("[5, 1, 4, 9, 2]",), ("[9, 5, 4]",)),
    CodeTask(TaskType.CODE_O, _FIB, ("10",), ("55",)),
    CodeTask(TaskType.CODE_O, _WINDOWS, ("[1, 2, 3, 4, 5], 2",), ("[3, 5, 7, 9]",)),
    CodeTask(TaskType.CODE_O, _COUNTS, ("'banana band'",), ("[('a', 4), ('n', 3)]",)),
)
STARTER_CODE_I = (
    CodeTask(TaskType.CODE_I, _SHOUT, ("'play'",), ("'YALP'",)),
    CodeTask(TaskType.CODE_I, _GCD, ("84, 36",), ("12",)),
    CodeTask(TaskType.CODE_I, _RUNS, ("[1, 1, 2, 3, 3, 3]",), ("[(1, 2), (2, 1), (3, 3)]",)),
)
STARTER_CODE_F = (
    CodeTask(TaskType.CODE_F, _GCD, ("12, 18", "7, 5", "100, 75", "9, 0"),
             ("6", "1", "25", "9"), "Returns the largest number dividing both arguments."),
    CodeTask(TaskType.CODE_F, _WINDOWS, ("[1, 2, 3], 1", "[1, 2, 3], 3", "[4, 0, 4, 0], 2",
                                         "[5], 2"),
             ("[1, 2, 3]", "[6]", "[4, 4, 4]", "[]"),
             "Sums of every window of k consecutive elements."),
)
STARTER_MATH = (
    MathTask("What is the sum of the first 10 positive odd integers?",
             "The first n odd integers sum to n^2, so the sum is 10^2 = 100.", "100"),
    MathTask("A rectangle has perimeter 20 and one side of length 3. What is its area?",
             "The other side is 20/2 - 3 = 7, so the area is 3 * 7 = 21.", "21"),
    MathTask("What is the probability that two fair coins both land heads?",
             "Each coin lands heads with probability 1/2, independently: 1/2 * 1/2 = 1/4.",
             r"\frac{1}{4}"),
)


def starter_tasks(task_type: TaskType) -> tuple[CodeTask, ...] | tuple[MathTask, ...]:
    """The built-in starter tasks of one type.

    >>> len(starter_tasks(TaskType.CODE_O)) > 0
    True
    """
    return {
        TaskType.CODE_O: STARTER_CODE_O,
        TaskType.CODE_I: STARTER_CODE_I,
        TaskType.CODE_F: STARTER_CODE_F,
        TaskType.MATH: STARTER_MATH,
    }[task_type]
