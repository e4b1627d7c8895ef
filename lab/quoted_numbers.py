"""What counts as a number on a page and in a source, where a quote sits (its anchor, its
test label), and when a quoted number matches its source."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

_NUMBER = re.compile(
    r"(?<![\w.\-/:@=#])[+\-−±]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%"  # a percentage
    r"|(?<![\w.\-/:@=#])[+\-−±]?(?:\d{1,3}(?:,\d{3})+|\d+)\.\d+(?![\w.]*\d)(?![A-Za-z_\-])")
SOURCE_NUMBER = re.compile(r"[+\-−]?\d[\d,]*(?:\.\d+)?(?:[eE][+\-]?\d+)?")
_FENCE = re.compile(r"^\s*```.*?^\s*```", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\([^)]*\)|https?://\S+")


_JSON_FENCE = re.compile(r"^\s*```json\s*$(.*?)^\s*```", re.S | re.M)


def source_numbers(text: str, json_file: bool = False) -> set[str]:
    """The numbers a source holds. A JSON number (a ``.json``/``.jsonl`` file, a ```` ```json ````
    block of the notebook) is a value with its sign: an unsigned one is written ``+``, so a
    quote with the opposite sign does not match it. An unsigned number in prose (``cut 26%``)
    is a magnitude and keeps no sign.

    >>> sorted(source_numbers('cut 26%\\n```json\\n{"d": 0.29, "e": -0.1}\\n```'))
    ['+0.29', '-0.1', '26']
    """
    def signed_all(part: str) -> set[str]:
        return {n if n[0] in "+-−" else "+" + n for n in SOURCE_NUMBER.findall(part)}

    if json_file:
        return signed_all(text)
    fenced = "".join(m.group(1) for m in _JSON_FENCE.finditer(text))
    return set(SOURCE_NUMBER.findall(_JSON_FENCE.sub("", text))) | signed_all(fenced)


def normal(token: str) -> str:
    """A quoted number without its sign and thousands separators.

    >>> [normal(t) for t in ("−0.088", "+26%", "1,498.5", "±0.3%")]
    ['0.088', '26%', '1498.5', '0.3%']
    """
    return token.lstrip("+-−±").replace(",", "")


def signed(token: str) -> str:
    """A quoted number as the registry lists it: its sign kept (``−`` written ``-``, ``±``
    dropped), thousands separators removed.

    >>> [signed(t) for t in ("−0.088", "+26%", "1,498.5", "±0.3%", "0.499")]
    ['-0.088', '+26%', '1498.5', '0.3%', '0.499']
    """
    token = token.replace("−", "-").replace(",", "")
    return token.lstrip("±")


def blank_code(match: re.Match) -> str:
    """The match replaced by spaces, newlines kept (so line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def numbers_in(text: str) -> list[tuple[int, str]]:
    """``(line, number)`` of every number quoted in markdown ``text`` (see the module doc),
    each as ``signed`` writes it.

    >>> numbers_in("cut by 26% (−0.023 [+0.013, 0.033]) on Python 3.11\\n`lr=0.5` v1.2.3 Qwen2.5")
    [(1, '26%'), (1, '-0.023'), (1, '+0.013'), (1, '0.033'), (1, '3.11')]
    >>> numbers_in("```\\n0.5\\n```\\n[a](x/0.5.md) 0.5B and 1,498.25 tok/s")
    [(4, '1498.25')]
    """
    text = prose(text)
    return [(text.count("\n", 0, m.start()) + 1, signed(m.group(0)))
            for m in _NUMBER.finditer(text)]


_REGION = re.compile(r"<!--\s*test:\s*([\w.-]+)\s*-->(.*?)<!--\s*/test\s*-->", re.S)
VERDICT_REGION = re.compile(
    r"<!--\s*verdict:\s*([\w.-]+)\s+(.*?)\s*-->(.*?)<!--\s*/verdict\s*-->", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_COUNT = re.compile(r"(?<![\w.\-])(\d+) of (\d+)(?![\w.])")
_TRIPLE = re.compile(r"([+\-−]?\d+(?:\.\d+)?%?)\s*\[([+\-−]?\d+(?:\.\d+)?%?),\s*"
                     r"([+\-−]?\d+(?:\.\d+)?%?)\]")
ANCHOR = 24  # characters of a quote's line before it that tie it to its place


def prose(text: str) -> str:
    """``text`` with code, links and URLs blanked (newlines kept)."""
    for pattern in (_FENCE, _CODE, _LINK, _COMMENT):
        text = pattern.sub(blank_code, text)
    return text


def anchor(line_text: str, start: int) -> str:
    """The place of a quote: up to ``ANCHOR`` characters of its line before it, whitespace
    collapsed.

    >>> anchor("| TPE, 12 of 16 trials | −0.0150 [", 25)
    '| TPE, 12 of 16 trials |'
    """
    return " ".join(line_text[:start].split())[-ANCHOR:].strip()


def quotes_in(text: str, counted: set[int] = frozenset()) -> list[tuple[int, str, str]]:
    """``(line, number, anchor)`` of every number of markdown ``text`` (``numbers_in``), and on
    the lines in ``counted`` (a result's lines) every count ``N of M`` too, in order.

    >>> [q[:2] for q in quotes_in("learned on 3 of 4 runs, +0.027 [+0.001, +0.052]", {1})]
    [(1, '3 of 4'), (1, '+0.027'), (1, '+0.001'), (1, '+0.052')]
    >>> quotes_in("learned on 3 of 4 runs, +0.027")[0]
    (1, '+0.027', 'learned on 3 of 4 runs,')
    """
    text = prose(text)
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    found = [(m.start(), signed(m.group(0))) for m in _NUMBER.finditer(text)]
    found += [(m.start(), f"{m.group(1)} of {m.group(2)}") for m in _COUNT.finditer(text)
              if text.count("\n", 0, m.start()) + 1 in counted]
    out = []
    for start, number in sorted(found):
        line = text.count("\n", 0, start) + 1
        out.append((line, number, anchor(text[starts[line - 1]:], start - starts[line - 1])))
    return out


def disordered(text: str) -> list[tuple[int, str]]:
    """``(line, interval)`` of every ``point [low, high]`` of ``text`` whose ends are out of
    order (``low <= point <= high`` fails): an interval is one ordered triple.

    >>> disordered("ok +0.294 [+0.223, +0.364]; bad +0.364 [+0.223, +0.294]")
    [(1, '+0.364 [+0.223, +0.294]')]
    """
    text, out = prose(text), []
    for m in _TRIPLE.finditer(text):
        point, low, high = (_decimal(signed(g).rstrip("%")) for g in m.groups())
        if None in (point, low, high) or not low <= point <= high:
            out.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return out


def labels(text: str, claims: set[str]) -> dict[int, str]:
    """``line -> claim`` for the test-labelled lines of markdown ``text``: those that link a
    declared claim (``results.md#<claim>``, ``claims/<claim>.md``) and those inside a
    ``<!-- test: <claim> -->`` ... ``<!-- /test -->`` region. Names not in ``claims`` are left
    out.

    >>> text = "a\\nx [r](results.md#c1) 0.5\\n<!-- test: c2 -->\\n0.1\\n<!-- /test -->"
    >>> labels(text, {"c1", "c2"})
    {2: 'c1', 3: 'c2', 4: 'c2', 5: 'c2'}
    """
    out: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for name in re.findall(r"(?:results\.md#|claims/)([\w.-]+?)(?:\.md|\.jsonl)?(?=[)`\s#]|$)",
                               line):
            if name in claims:
                out[number] = name
                break
    for match in [*_REGION.finditer(text), *VERDICT_REGION.finditer(text)]:
        if match.group(1) in claims:
            first = text.count("\n", 0, match.start()) + 1
            for number in range(first, first + match.group(0).count("\n") + 1):
                out[number] = match.group(1)
    return dict(sorted(out.items()))


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "").replace("−", "-"))
    except InvalidOperation:
        return None


def matches(quoted: str, source_numbers: set[str]) -> bool:
    """Whether ``quoted`` is one of ``source_numbers``, as written or rounded.

    A decimal with d places matches a source number that rounds to it at d places; a
    percentage also matches a fraction 100 times smaller (``-26%`` ~ ``-0.2613``). A quote
    written with a sign must not meet the opposite sign in the source (an unsigned source
    number, ``cut 26%``, matches either); an unsigned quote is a magnitude and matches either.

    >>> matches("0.023", {"0.0227"}), matches("-26%", {"-0.2613"}), matches("0.4", {"0.46"})
    (True, True, False)
    >>> matches("+0.055", {"-0.055"}), matches("0.055", {"-0.055"}), matches("-26%", {"26"})
    (False, True, True)
    """
    count = _COUNT.fullmatch(quoted)
    if count:  # "N of M": both whole numbers in the source, N <= M
        whole = {n.lstrip("+-−").replace(",", "") for n in source_numbers}
        return int(count.group(1)) <= int(count.group(2)) and {
            count.group(1), count.group(2)} <= whole
    quoted = signed(quoted)
    sign = quoted[0] if quoted[0] in "+-" else ""
    percent = quoted.endswith("%")
    value = _decimal(quoted.lstrip("+-").rstrip("%"))
    if value is None:
        return False
    places = Decimal(1).scaleb(value.as_tuple().exponent)
    for text in source_numbers:
        number = _decimal(text)
        if number is None:
            continue
        written = text[0] if text[0] in "+-−" else ""
        if sign and written and number != 0 and (written == "+") != (sign == "+"):
            continue
        for candidate in ((abs(number), abs(number) * 100) if percent else (abs(number),)):
            for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN):
                try:
                    if candidate.quantize(places, rounding=mode) == value:
                        return True
                except InvalidOperation:  # too many digits to round to this place
                    break
    return False
