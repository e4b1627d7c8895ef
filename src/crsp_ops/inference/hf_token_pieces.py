"""Map tokenizer vocabulary pieces to raw bytes and back, for the three common HF vocab styles.

Engines report a token as its piece or its decoded text; turning either back into an id needs
the tokenizer's convention (``byte_level``, ``sentencepiece`` or ``other``).

Design: docs/design/inference.md#hf_token_pieces.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

PieceStyle = Literal["byte_level", "sentencepiece", "other"]

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_SENTENCEPIECE_SPACE = "\u2581"  # ▁


@lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable character table (the ``byte_level`` alphabet)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = list(printable)
    shift = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + shift)
            shift += 1
    return {byte: chr(char) for byte, char in zip(printable, chars, strict=True)}


@lru_cache(maxsize=1)
def unicode_to_byte() -> dict[str, int]:
    """Inverse of :func:`byte_to_unicode`."""
    return {char: byte for byte, char in byte_to_unicode().items()}


def detect_piece_style(tokenizer: Any) -> PieceStyle:
    """Guess the vocabulary style from how the tokenizer spells a leading space."""
    ids = tokenizer.encode(" a", add_special_tokens=False)
    pieces = tokenizer.convert_ids_to_tokens(ids)
    first = pieces[0] if pieces else ""
    if first.startswith("Ġ"):
        return "byte_level"
    if first.startswith(_SENTENCEPIECE_SPACE):
        return "sentencepiece"
    return "other"


def piece_to_bytes(piece: str, style: PieceStyle) -> bytes | None:
    """The raw bytes a vocabulary piece stands for, or ``None`` when the style has no byte view."""
    if style == "byte_level":
        table = unicode_to_byte()
        if all(char in table for char in piece):
            return bytes(table[char] for char in piece)
        return piece.encode("utf-8")  # added/special tokens are stored verbatim
    if style == "sentencepiece":
        match = _BYTE_FALLBACK.match(piece)
        if match:
            return bytes([int(match.group(1), 16)])
        return piece.replace(_SENTENCEPIECE_SPACE, " ").encode("utf-8")
    return None


def bytes_to_pieces(data: bytes, style: PieceStyle) -> list[str]:
    """Candidate vocabulary pieces (most likely first) that spell exactly ``data`` as one token."""
    if style == "byte_level":
        table = byte_to_unicode()
        return ["".join(table[byte] for byte in data)]
    candidates = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if style == "sentencepiece":
        if text is not None:
            candidates.append(text.replace(" ", _SENTENCEPIECE_SPACE))
        if len(data) == 1:
            candidates.append(f"<0x{data[0]:02X}>")
        return candidates
    return [text] if text is not None else []
