"""Errors of the runtime. One root; each class says when it is raised. Control-flow
signals (a cancelled model call) live apart, in ``runtime.signals``."""

from __future__ import annotations


class RuntimeErrorBase(Exception):
    """Root of every error the runtime raises on purpose."""

    code = "runtime_error"


class DefinitionError(RuntimeErrorBase):
    """Raised when an agent or tool definition is malformed or cannot be loaded."""

    code = "invalid_definition"


class UnknownAgent(RuntimeErrorBase):
    """Raised when a turn names an agent the agents module does not declare."""

    code = "unknown_agent"


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
