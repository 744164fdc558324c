"""The one error tree: every error turnkeep raises on purpose descends from
``TurnkeepError``. Each class carries its stable ``code`` and the HTTP ``status`` an
edge answers it with, and says when it is raised; every edge (HTTP api/problems.py,
MCP, A2A) reads them from the class, no table restates them. The branches live
beside what raises them: the runtime's here, ``StoreError`` (store/errors.py),
``ServiceError`` (api/errors.py), ``WorkerError`` (worker/errors.py).

The client's ``turnkeep.client.ApiError`` is another class on purpose: a problem as a
client receives it, carrying the code and status an edge answered with (the client
stands alone: it imports nothing else of ours). ``from turnkeep import TurnkeepError``
is this root, for code running inside turnkeep (a tool); a client catches ``ApiError``.

Control-flow signals (a lost lease, a cancellation, a tool waiting on credentials)
are no errors and have their own root, ``turnkeep.runtime.signals.Signal``: they unwind a
loop and never become an answer.

The runtime's codes are persisted (a turn's error message, a tool's error result):
compatibility data, like the names in tests/unit/test_persisted_names.py.
"""

from __future__ import annotations

from typing import ClassVar


class TurnkeepError(Exception):
    """Root of every error turnkeep raises on purpose.

    ``status`` is the HTTP status an edge answers with; a class left at 500 is no
    client's business: every edge answers it as ``internal`` (and logs its name).
    """

    #: the error's stable name on every surface
    code: ClassVar[str] = "internal"
    #: the HTTP status an edge answers it with
    status: ClassVar[int] = 500
    #: what the code means, the same for each instance (a problem's ``title``; None:
    #: the code itself)
    title: ClassVar[str | None] = "Internal server error"
    #: what a client is told, for an error whose message may name what a client must
    #: not see (ids, another tenant's data); None: the message
    public: ClassVar[str | None] = None

    def detail(self) -> str:
        """What a client is told."""
        return str(self) if self.public is None else self.public

    def fields(self) -> dict[str, object]:
        """What a client is told besides the detail (a problem body's extra members)."""
        return {}

    def headers(self) -> dict[str, str]:
        """The HTTP headers its answer carries."""
        return {}


class RuntimeErrorBase(TurnkeepError):
    """Root of the errors the runtime raises on purpose (a turn's own failures, never a
    client's request: answered as ``internal`` should one reach an edge)."""

    code = "runtime_error"
    title: ClassVar[str | None] = None


class DefinitionError(RuntimeErrorBase):
    """Raised when an agent or tool definition is malformed or cannot be loaded."""

    code = "invalid_definition"


class UnknownAgent(RuntimeErrorBase):
    """Raised when a turn names an agent the agents module does not declare."""

    code = "unknown_agent"
    status = 422
    title = "Unknown agent"
    public = "no agent of that name is declared"


class ModelError(RuntimeErrorBase):
    """Root of the errors a model provider adapter raises."""

    code = "model_error"


class TransientModelError(ModelError):
    """Raised when a provider call failed in a way worth retrying (429, 5xx, timeout, reset).

    ``retry_after`` carries the provider's Retry-After in seconds, when it gave one.
    """

    code = "model_transient"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderRateLimited(TransientModelError):
    """Raised when the provider refused a call for its rate limit (HTTP 429, or a
    rate-limit error in the stream): transient, and under a declared rate limit fed to
    the shared pace instead of retried on the spot (runtime/ratelimits.py)."""


class ContextOverflow(ModelError):
    """Raised when the provider says the request is longer than the model's context."""

    code = "context_overflow"


class PermanentModelError(ModelError):
    """Raised when a provider call failed in a way that retrying cannot fix (4xx, bad reply)."""

    code = "model_failed"


class BudgetExceeded(RuntimeErrorBase):
    """Raised when a turn would pass one of its bounds (iterations, calls, tokens, time).

    ``bound`` names the limit reached (a ``Limits`` field) and ``limit`` its value.
    """

    code = "budget_exceeded"

    def __init__(self, message: str, *, bound: str = "", limit: float = 0) -> None:
        super().__init__(message)
        self.bound = bound
        self.limit = limit


class UnknownProvider(DefinitionError):
    """Raised when an agent names a model provider nothing registers."""

    code = "unknown_provider"
