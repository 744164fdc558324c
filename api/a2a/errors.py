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

from api import problems
from api.errors import AnswerInvalid
from runtime.errors import UnknownAgent
from store.errors import NotFound, StoreError, TurnNotActive

log = logging.getLogger(__name__)


def _from_store(exc: StoreError) -> A2AError:
    if isinstance(exc, NotFound):
        return TaskNotFoundError()
    if isinstance(exc, TurnNotActive):
        return TaskNotCancelableError("the task has already ended")
    if isinstance(exc, AnswerInvalid):
        errors = [{"field": exc.where, "message": exc.message}]
        return InvalidParamsError(str(exc), data={"code": exc.code, "errors": errors})
    problem = problems.from_store_error(exc)
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
    except StoreError as exc:
        raise _from_store(exc) from exc
    except UnknownAgent as exc:
        raise InvalidParamsError(
            "no agent of that name is declared", data={"code": "unknown_agent"}
        ) from exc
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise InvalidParamsError(
            "invalid field(s): " + ", ".join(fields), data={"code": "validation_error"}
        ) from exc
    except (redis.RedisError, TimeoutError) as exc:
        raise InternalError("redis is unavailable", data={"code": "unavailable"}) from exc
    except Exception as exc:
        log.error("a2a: unhandled error: %s", type(exc).__name__)
        raise InternalError("internal error", data={"code": "internal"}) from exc
