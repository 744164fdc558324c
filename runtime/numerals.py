"""Whole numbers in text that came from outside: a header, a cursor, a page token.

``str.isdigit`` is true of "²" and of the digits of other scripts (Arabic-Indic,
full-width), which ``int`` then refuses (an uncaught ValueError: a 500) or reads as
numbers no client of ours writes; a cursor of forty digits would pass Python and fail
Postgres' bigint. So a number from outside is ASCII digits only, short enough for a
bigint."""

from __future__ import annotations

#: a bigint holds every number of 18 digits
MAX_DIGITS = 18


def ascii_int(text: str | None, *, max_digits: int = MAX_DIGITS) -> int | None:
    """The number ``text`` writes in 1 to ``max_digits`` ASCII digits; None otherwise."""
    if text is None or not 0 < len(text) <= max_digits:
        return None
    if not (text.isascii() and text.isdigit()):
        return None
    return int(text)
