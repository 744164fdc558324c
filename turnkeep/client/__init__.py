"""A typed Python client of the turnkeep HTTP API: ``Client`` (sync), ``AsyncClient``.

    from turnkeep import Client

    with Client() as tk:                          # TURNKEEP_URL, TURNKEEP_TOKEN
        turn = tk.turns.admit("s-1", "demo", "Weather in Paris?")
        for event in tk.sessions.events("s-1", after=turn.accepted_seq - 1):
            print(event.seq, event.type)
            if event.turn_id == turn.turn_id and event.terminal:
                break
        print(tk.turns.wait("s-1", turn.turn_id, timeout=60).result)

The methods are grouped by the resource they act on, one attribute each: ``turns``,
``sessions``, ``attachments``, ``agents``, ``schedules``, ``projects``, ``bindings``,
``feedback``, ``inbox``, ``search``, ``max_running`` and ``eval`` (``eval.datasets``,
``eval.experiments``). Every method is one route of the API. ``turns.admit`` sends an
``Idempotency-Key`` (the turn id): one is generated when none is given, so a call
retried after a lost answer reaches the same turn, never a second one.
``sessions.events`` follows the session's SSE and reconnects by itself from the last
seq it yielded (``Last-Event-ID``) after a dropped connection, a read timeout, a 5xx or
the server's ``stream.resume``; a cursor the journal no longer holds raises
``ResyncRequired``. Every failure is an ``ApiError`` with the problem's ``code`` and
HTTP ``status``. Imports nothing of the server's packages.

The modules: one per resource (``turns``, ``sessions``, …, ``evaluation``), each
building its routes' requests without I/O and holding the resource's sync class and its
``Async`` twin; ``calls`` holds what every request shares (``ApiCall``, ``Config``),
``errors`` reads problems, ``sse`` follows a stream's frames; ``sync`` (``Client``) and
``aio`` (``AsyncClient``) only send. The wire models are turnkeep/models.py and the
modules beside it, shared with the API's OpenAPI document.
"""

from turnkeep.client.aio import AsyncClient
from turnkeep.client.calls import Messages
from turnkeep.client.errors import ApiError, ResyncRequired, Unreachable
from turnkeep.client.settings import DEFAULT_URL, ClientSettings
from turnkeep.client.sse import SSEParser
from turnkeep.client.sync import Client
from turnkeep.erasure import Tombstone
from turnkeep.feedback import Feedback, FeedbackSummary
from turnkeep.inbox import InboxItem, InboxPage
from turnkeep.models import (
    TERMINAL_EVENTS,
    TERMINAL_STATES,
    AgentInfo,
    AgentList,
    AgentVersions,
    Attachment,
    DeclaredVersion,
    DefinitionUse,
    Delta,
    Event,
    EventPage,
    Fork,
    Held,
    LiveWorker,
    MessagePage,
    PendingInput,
    Project,
    ProjectPage,
    RerunOf,
    Session,
    SessionPage,
    StreamToken,
    Timeline,
    Turn,
    TurnPage,
    TurnState,
    TurnUpgrade,
    VersionRef,
    VersionUpgrade,
)
from turnkeep.schedules import Schedule, SchedulePage

__all__ = [
    "DEFAULT_URL",
    "TERMINAL_EVENTS",
    "TERMINAL_STATES",
    "AgentInfo",
    "AgentList",
    "AgentVersions",
    "ApiError",
    "AsyncClient",
    "Attachment",
    "Client",
    "ClientSettings",
    "DeclaredVersion",
    "DefinitionUse",
    "Delta",
    "Event",
    "EventPage",
    "Feedback",
    "FeedbackSummary",
    "Fork",
    "Held",
    "InboxItem",
    "InboxPage",
    "LiveWorker",
    "MessagePage",
    "Messages",
    "PendingInput",
    "Project",
    "ProjectPage",
    "RerunOf",
    "ResyncRequired",
    "SSEParser",
    "Schedule",
    "SchedulePage",
    "Session",
    "SessionPage",
    "StreamToken",
    "Timeline",
    "Tombstone",
    "Turn",
    "TurnPage",
    "TurnState",
    "TurnUpgrade",
    "Unreachable",
    "VersionRef",
    "VersionUpgrade",
]
