"""tests/pixels.py, the browser tests' PNG reader, against PNGs written here with every
row filter PNG defines (none, sub, up, average, Paeth) and both pixel formats a
screenshot comes in (RGB, RGBA): it must give back exactly the pixels written."""

from __future__ import annotations

import struct
import zlib

import pytest

from tests.pixels import _paeth, decode, hex_rgb, near


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _filtered(kind: int, line: bytes, previous: bytes, bpp: int) -> bytes:
    out = bytearray()
    for i, x in enumerate(line):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        corner = previous[i - bpp] if i >= bpp else 0
        guess = (0, left, up, (left + up) >> 1, _paeth(left, up, corner))[kind]
        out.append((x - guess) & 0xFF)
    return bytes([kind]) + bytes(out)


def _png(pixels: list[list[tuple[int, ...]]], colour: int) -> bytes:
    bpp = 3 if colour == 2 else 4
    height, width = len(pixels), len(pixels[0])
    previous, raw = bytes(width * bpp), b""
    for y, row in enumerate(pixels):
        line = bytes(c for p in row for c in p)
        raw += _filtered(y % 5, line, previous, bpp)  # each filter in turn
        previous = line
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw))
        + _chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("colour", [2, 6])
def test_every_filter_gives_back_the_pixels_written(colour: int) -> None:
    extra = (200,) if colour == 6 else ()
    pixels = [
        [
            ((x * 37 + y * 11) % 256, (x * 5 + y * 71) % 256, (x * y * 13) % 256, *extra)
            for x in range(9)
        ]
        for y in range(10)
    ]
    image = decode(_png(pixels, colour))
    assert (image.width, image.height) == (9, 10)
    for y in range(10):
        for x in range(9):
            assert image.rgb(x, y) == pixels[y][x][:3], (x, y)
    with pytest.raises(IndexError):
        image.rgb(9, 0)


def test_what_it_does_not_read_is_refused_and_colours_compare() -> None:
    with pytest.raises(ValueError, match="not a PNG"):
        decode(b"GIF89a")
    assert hex_rgb("#2457c5") == (0x24, 0x57, 0xC5)
    assert near((10, 10, 10), (14, 6, 10)) and not near((10, 10, 10), (20, 10, 10))
