"""Pixels of a PNG screenshot, for the browser tests' checks of what was drawn where
(tests/integration/test_console_find.py). Playwright's screenshots are 8-bit RGB or
RGBA, not interlaced: that is all this reads (zlib and the five row filters), so no
imaging library is needed for a handful of pixel reads."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    #: bytes per pixel: 3 (RGB) or 4 (RGBA)
    channels: int
    rows: list[bytes]

    def rgb(self, x: int, y: int) -> tuple[int, int, int]:
        """The colour at (x, y), from the top left corner."""
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise IndexError(f"({x}, {y}) is outside {self.width}x{self.height}")
        i = x * self.channels
        r, g, b = self.rows[y][i : i + 3]
        return r, g, b


def decode(png: bytes) -> Image:
    """An 8-bit RGB(A) PNG's pixels; ValueError for any other kind."""
    if not png.startswith(_SIGNATURE):
        raise ValueError("not a PNG")
    pos, data, header = len(_SIGNATURE), b"", None
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            data += body
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR")
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"an 8-bit RGB(A) PNG only (depth {depth}, colour type {color})")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(data)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return Image(width, height, channels, rows)


def hex_rgb(color: str) -> tuple[int, int, int]:
    """``#rrggbb`` as (r, g, b)."""
    value = color.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def near(a: tuple[int, int, int], b: tuple[int, int, int], tolerance: int = 6) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=True))
