import pytest

from crsp_ops.inference.hf_token_pieces import (
    byte_to_unicode,
    bytes_to_pieces,
    piece_to_bytes,
)


def test_byte_level_alphabet_round_trips_every_byte():
    table = byte_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    every_byte = bytes(range(256))
    (piece,) = bytes_to_pieces(every_byte, "byte_level")
    assert piece_to_bytes(piece, "byte_level") == every_byte


@pytest.mark.parametrize(
    ("piece", "raw"),
    [("Ġhello", b" hello"), ("ĊĊ", b"\n\n"), ("<|im_end|>", b"<|im_end|>"), ("ðŁ", b"\xf0\x9f")],
)
def test_byte_level_pieces(piece, raw):
    assert piece_to_bytes(piece, "byte_level") == raw
    if piece != "<|im_end|>":
        assert bytes_to_pieces(raw, "byte_level") == [piece]


def test_sentencepiece_pieces_and_byte_fallback():
    assert piece_to_bytes("▁hello", "sentencepiece") == b" hello"
    assert piece_to_bytes("<0xE2>", "sentencepiece") == b"\xe2"
    assert bytes_to_pieces(b" hello", "sentencepiece") == ["▁hello"]
    assert bytes_to_pieces(b"\xe2", "sentencepiece") == ["<0xE2>"]
    # one ASCII byte is both a text piece and a byte-fallback piece: text first
    assert bytes_to_pieces(b"A", "sentencepiece") == ["A", "<0x41>"]


def test_other_style_has_no_byte_view():
    assert piece_to_bytes("##ing", "other") is None
    assert bytes_to_pieces(b"ing", "other") == ["ing"]
    assert bytes_to_pieces(b"\xff", "other") == []
