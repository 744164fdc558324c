"""``api.a2a_server`` moved to the package ``api.a2a``: the old path still imports for
one release, warns, and hands out the very objects of the new modules."""

from __future__ import annotations

import importlib
import sys

import pytest

from api.a2a import cards, handler, ids, messages, routes, translate


def test_the_old_a2a_module_warns_and_reexports_the_package() -> None:
    sys.modules.pop("api.a2a_server", None)
    with pytest.warns(DeprecationWarning, match=r"api\.a2a_server moved to the package api\.a2a"):
        old = importlib.import_module("api.a2a_server")
    assert old.router is routes.router
    assert old.PUBLIC_PATTERNS is routes.PUBLIC_PATTERNS and old.ROOT_CARD == routes.ROOT_CARD
    assert old.TurnkeepRequestHandler is handler.TurnkeepRequestHandler
    assert old.session_for is ids.session_for and old.turn_id_for is ids.turn_id_for
    assert old.agent_card is cards.agent_card and old.task_of is translate.task_of
    assert old.text_of is messages.text_of
    # the ids a message's messageId gives are unchanged by the move
    digest = "a461b472cb41a9ec3dee5c90cf8e4a78"  # sha256("m-1"), its first 32 hex digits
    assert old.session_for("", "m-1") == f"a2a-{digest}"
    assert old.turn_id_for("ctx", "m-1") == f"ctx.{digest}"
    assert old.session_of(f"ctx.{digest}") == "ctx" and old.session_of("ctx.other") is None
