"""Reruns: a new turn that re-runs a committed one from a step, reusing the outcomes
before it (runtime/reruns.py decides which; store/reruns.py writes them; docs/reruns.md)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from turnkeep.api.auth import Principal
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import ids
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.requests import ID_REGEX, NO_NUL
from turnkeep.runtime import reruns
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store import admission as admitting
from turnkeep.store.errors import NotFound
from turnkeep.store.records import Admission


class ToolResultEdit(BaseModel):
    """What the tool call of ``from_step`` answers instead."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(pattern=NO_NUL, max_length=1_000_000)
    is_error: bool = False


class EditedCall(BaseModel):
    """A tool call an edited model answer asks for."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, pattern=ID_REGEX)
    name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = {}


class ModelAnswerEdit(BaseModel):
    """What the model call of ``from_step`` answers instead."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(default="", pattern=NO_NUL, max_length=1_000_000)
    tool_calls: Annotated[list[EditedCall], Field(max_length=64)] = []


class Replacement(BaseModel):
    """The outcome ``from_step`` starts from: one of the two."""

    model_config = ConfigDict(extra="forbid")

    tool_result: ToolResultEdit | None = None
    model_answer: ModelAnswerEdit | None = None

    @model_validator(mode="after")
    def _one(self) -> Replacement:
        if (self.tool_result is None) == (self.model_answer is None):
            raise ValueError("give exactly one of tool_result and model_answer")
        return self

    def edit(self) -> reruns.Replacement:
        if self.tool_result is not None:
            return reruns.EditedToolResult(self.tool_result.content, self.tool_result.is_error)
        assert self.model_answer is not None
        calls = [c.model_dump(exclude_none=True) for c in self.model_answer.tool_calls]
        return reruns.ModelAnswer(self.model_answer.content, calls)


class RerunRequest(BaseModel):
    """``POST /v1/sessions/{sid}/turns/{tid}/rerun``."""

    model_config = ConfigDict(extra="forbid")

    #: the first step run live (or replaced): the steps before it are reused
    from_step: int = Field(strict=True, ge=1, le=1_000_000)
    #: an edited outcome for ``from_step``, validated like the step's own
    replace: Replacement | None = None
    #: the new turn's id (else the Idempotency-Key, else a new one)
    turn_id: str | None = Field(default=None, pattern=ID_REGEX)
    #: run it in a fork of the session (forked just after the source's admission)
    #: instead of the session itself
    fork: bool = False
    #: the fork's session id (with ``fork``; else the turn id is used)
    session_id: str | None = Field(default=None, pattern=ID_REGEX)


def rerun(
    services: ApiResources,
    principal: Principal,
    sid: str,
    tid: str,
    key: str | None,
    body: RerunRequest,
) -> Admission:
    """Admit the rerun of ``tid`` from ``body.from_step`` (blocking): one transaction,
    after a fork's when ``body.fork`` (each idempotent by its id, so a retry completes
    what a crash between them left)."""
    may_write(principal)
    new_id = ids.new_id(key, body.turn_id, "body.turn_id")
    if body.session_id is not None and not body.fork:
        raise RequestInvalid("body.session_id", "names a fork: only with fork")
    visible(services, principal, sid, missing="turn not found")
    source = services.store.reads.get_turn(principal.tenant, sid, tid)
    if TurnInput.from_json(source.input).delegation is not None:
        raise RequestInvalid("path.tid", "a delegated child is re-run through its parent")
    try:
        plan = reruns.plan(
            services.store.reads.turn_events(principal.tenant, sid, tid),
            session_id=sid,
            turn_id=tid,
            accepted_seq=source.accepted_seq,
            from_step=body.from_step,
            replacement=None if body.replace is None else body.replace.edit(),
            by=principal.subject,
        )
    except reruns.RerunRefused as exc:
        raise RequestInvalid(exc.where, exc.message) from None
    target = sid
    if body.fork:
        target = body.session_id or new_id
        hit(FaultPoint.BEFORE_FORK)
        services.store.forks.fork(
            principal.tenant,
            sid,
            target,
            at_seq=source.accepted_seq,
            default_ttl=services.settings.erasure.session_ttl_for(principal.tenant),
        )
        hit(FaultPoint.AFTER_FORK)
    stored = TurnInput.from_json(source.input)
    turn_input = TurnInput(
        list(stored.messages),
        attachments=stored.attachments,
        project=stored.project,
        rerun=plan.lineage,
    )
    hit(FaultPoint.BEFORE_RERUN)
    try:
        # the one admission every turn takes (store/admission.py)
        admitted = admitting.admit(
            services.store,
            services.settings,
            admitting.Ask(
                source=admitting.Source.RERUN,
                tenant_id=principal.tenant,
                session_id=target,
                turn_id=new_id,
                by=principal.subject,
                agent_name=source.agent_name,
                agent_hash=source.agent_hash,
                turn_input=turn_input,
                output_schema=source.output_schema,
                budget=source.budget,
                agent_version=source.agent_version,
                on_deploy=source.on_deploy,
                metadata=source.metadata,
                copies=[c.to_json() for c in plan.copies],
            ),
        )
    except NotFound:
        raise NotFound("turn not found") from None
    hit(FaultPoint.AFTER_RERUN)
    services.metrics.admitted("created" if admitted.created else "replayed")
    return admitted
