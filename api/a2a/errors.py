"""The A2A edge: turnkeep's typed errors as A2A's JSON-RPC errors, with the problem
code of the HTTP surface in ``data.code``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from pydantic import ValidationError

from turnkeep.api import problems
from turnkeep.api.errors import AnswerInvalid, RedisUnavailable, RequestInvalid
from turnkeep.runtime.errors import TurnkeepError
from turnkeep.store.errors import NotFound, TurnNotActive

log = logging.getLogger(__name__)


def _translated(exc: TurnkeepError) -> A2AError:
    """An error of the tree as A2A's: its code in ``data.code``, HTTP's text."""
    if isinstance(exc, NotFound):
        return TaskNotFoundError()
    if isinstance(exc, TurnNotActive):
        return TaskNotCancelableError("the task has already ended")
    if isinstance(exc, AnswerInvalid):
        errors = [{"field": exc.where, "message": exc.message}]
        return InvalidParamsError(str(exc), data={"code": exc.code, "errors": errors})
    problem = problems.answer_off_http(exc)
    data = {"code": problem.code}
    if problem.status == 403:
        return InvalidRequestError(problem.detail, data=data)
    if problem.status >= 500:
        return InternalError(problem.detail, data=data)
    return InvalidParamsError(problem.detail, data=data)


@contextmanager
def edge() -> Iterator[None]:
    """turnkeep's typed errors as A2A errors (which pass as they are). Never the
    input nor another tenant's data in a message: they are the HTTP problems' texts."""
    try:
        yield
    except A2AError:
        raise
    except TurnkeepError as exc:
        raise _translated(exc) from exc
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise InvalidParamsError(
            "invalid field(s): " + ", ".join(fields), data={"code": RequestInvalid.code}
        ) from exc
    except (redis.RedisError, TimeoutError) as exc:
        raise _translated(RedisUnavailable()) from exc
    except Exception as exc:
        log.error("a2a: unhandled error: %s", type(exc).__name__)
        problem = problems.internal()
        raise InternalError(problem.detail, data={"code": problem.code}) from exc
