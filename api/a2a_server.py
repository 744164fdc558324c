"""Moved: the A2A surface is the package ``api.a2a`` (one module per concern; its
docstring has the protocol). This module re-exports its public names for one release.
"""

from __future__ import annotations

import warnings

from api.a2a.call import Call, Started
from api.a2a.cards import agent_card, root_card
from api.a2a.handler import CANCEL_WAIT, TurnkeepRequestHandler
from api.a2a.ids import DIGEST, MAX_CONTEXT, session_for, session_of, turn_id_for
from api.a2a.messages import answer_of, text_of
from api.a2a.routes import PUBLIC_PATTERNS, ROOT_CARD, router
from api.a2a.translate import stream_events, task_of, task_state

__all__ = [
    "CANCEL_WAIT",
    "DIGEST",
    "MAX_CONTEXT",
    "PUBLIC_PATTERNS",
    "ROOT_CARD",
    "Call",
    "Started",
    "TurnkeepRequestHandler",
    "agent_card",
    "answer_of",
    "root_card",
    "router",
    "session_for",
    "session_of",
    "stream_events",
    "task_of",
    "task_state",
    "text_of",
    "turn_id_for",
]

warnings.warn(
    "api.a2a_server moved to the package api.a2a (ids, cards, messages, translate, "
    "errors, call, handler, routes); this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
