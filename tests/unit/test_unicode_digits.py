"""Integers read from request text take ASCII digits only (issue 37, item 10):
``str.isdigit`` is true of "²" and of other scripts' digits, and ``int`` then raised
(a 500) or read them (an Arabic-Indic three is 3). A signature's timestamp of them is
a refusal (401 at the route), a cursor of them a typed 422."""

from __future__ import annotations

import time

import pytest

from turnkeep.api.errors import RequestInvalid
from turnkeep.api.service import inbox
from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import slack
from turnkeep.runtime.numerals import ascii_int

ARABIC_INDIC = "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"
HOSTILE = [
    "²",
    "\u0663",  # an Arabic-Indic three
    "\u0661\u0667" + "\u0660" * 8,
    "\uff11\uff12",  # full-width
    "1²",
    "\u06f1",  # an extended Arabic-Indic one
    "9" * 5000,
    "",
    " 1",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_only_ascii_digits_of_a_bounded_length_are_a_number(text: str) -> None:
    assert ascii_int(text) is None


def test_ascii_digits_are() -> None:
    assert ascii_int("0") == 0 and ascii_int("1765000000") == 1765000000
    assert ascii_int("9" * 18) == 10**18 - 1 and ascii_int("9" * 19) is None


@pytest.mark.parametrize("stamp", ["²", "\u0663", "1²", "9" * 5000])
def test_a_slack_timestamp_of_other_digits_is_refused_never_raised(stamp: str) -> None:
    body = b'{"type": "event_callback"}'
    sent = slack.signature("s3cret", stamp, body)
    assert slack.verify("s3cret", stamp, body, sent) is False


def test_a_slack_timestamp_in_arabic_indic_digits_is_refused_though_signed() -> None:
    now = int(time.time())
    stamp = str(now).translate(str.maketrans("0123456789", ARABIC_INDIC))
    body = b"{}"
    assert slack.verify("s3cret", str(now), body, slack.signature("s3cret", str(now), body))
    assert not slack.verify("s3cret", stamp, body, slack.signature("s3cret", stamp, body))


@pytest.mark.parametrize("stamp", ["²", "\u0663", "\uff11\uff17"])
def test_a_webhook_signature_time_of_other_digits_is_refused_never_raised(stamp: str) -> None:
    assert webhooks.verify("s3cret", b"{}", f"t={stamp},v1=00") is False


@pytest.mark.parametrize("after", ["².s-1", "\u0663.s-1", "\uff19.s-1", f"{'9' * 40}.s-1"])
def test_an_inbox_cursor_of_other_digits_is_a_typed_422(after: str) -> None:
    with pytest.raises(RequestInvalid) as bad:
        inbox.cursor(after)
    assert bad.value.status == 422 and bad.value.code == "validation_error"
