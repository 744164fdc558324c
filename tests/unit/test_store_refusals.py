"""The statements that refuse in SQL (they divide by zero to abort themselves) and
what each refusal means: one table (store/errors.py ``REFUSALS``), held to the SQL."""

from __future__ import annotations

import re

import pytest
from psycopg.errors import DivisionByZero

from turnkeep.store.errors import (
    REFUSALS,
    LaneHeadMoved,
    Refused,
    RevisionMoved,
    TurnIdTaken,
    refusal,
)
from turnkeep.store.sql import source

#: a statement's own guard: ``WHERE 1 / (<refused?>)::int = 1`` and its CASE form
_GUARD = re.compile(r"\b1 / \(")


def test_every_statement_that_divides_by_zero_says_what_its_refusal_means():
    dividing = {name for name, sql in source().items() if _GUARD.search(sql)}
    assert (
        dividing
        == set(REFUSALS)
        == {
            "admit_turn",
            "admit_rerun",
            "start_turn",
            "fenced_append",
        }
    )


@pytest.mark.parametrize(
    ("statement", "reason"),
    [("admit_turn", TurnIdTaken), ("start_turn", LaneHeadMoved), ("fenced_append", RevisionMoved)],
)
def test_a_refusal_is_its_statements_named_reason(statement: str, reason: type[Refused]):
    err = refusal(statement, DivisionByZero("division by zero"))
    assert type(err) is reason and err.statement == statement
    assert str(err) == f"{statement} refused"


def test_a_division_by_zero_in_a_statement_that_declares_no_refusal_is_raised_as_it_is():
    exc = DivisionByZero("division by zero")
    with pytest.raises(DivisionByZero) as raised:
        refusal("get_turn", exc)
    assert raised.value is exc
