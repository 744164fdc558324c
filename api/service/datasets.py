"""Datasets: named, versioned, immutable sets of cases (docs/evaluation.md "Datasets").
A version is made from cases written as JSON or JSON Lines (``create_version``), or
from real turns of the tenant (``add_turns``: each turn's input, and the assertions the
caller gives or derives from what the turn did), appended to a version's cases. Every
case is validated before anything is stored (422 naming the field), and a
``never_appears`` secret is sealed (runtime/evaluation/verdicts.py ``seal``)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from turnkeep.api.auth import Principal
from turnkeep.api.errors import RequestInvalid, ServiceError
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import attachments
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.assertions import CASE_ID, MAX_CASES, Assertion, Case, CaseInput, CaseSpec
from turnkeep.evaluation import MAX_DATASET_VERSION
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.evaluation import derive, verdicts
from turnkeep.runtime.evaluation.trajectory import trajectory
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.store.datasets import CaseRecord, DatasetRecord
from turnkeep.store.errors import NotFound, StoreError

ASSERTIONS: TypeAdapter[list[Assertion]] = TypeAdapter(list[Assertion])


class DatasetCreate(BaseModel):
    """``POST /v1/datasets/{name}/versions``: the version's cases (as JSON Lines, one
    case a line, with ``Content-Type: application/x-ndjson``)."""

    model_config = ConfigDict(extra="forbid")

    cases: list[CaseSpec] = Field(min_length=1, max_length=MAX_CASES)


class TurnCase(BaseModel):
    """A real turn of the tenant, as a case: its input, and ``assertions`` given and
    derived (``derive``: ``trajectory``, ``output``: runtime/evaluation/derive.py)."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(pattern=ID_REGEX)
    turn_id: str = Field(pattern=ID_REGEX)
    case_id: str | None = Field(default=None, pattern=CASE_ID)
    assertions: list[Assertion] = Field(default_factory=list, max_length=50)
    derive: list[Literal["trajectory", "output"]] = Field(default_factory=list, max_length=2)


class FromTurns(BaseModel):
    """``POST /v1/datasets/{name}/cases``: a new version, the cases of ``base`` (absent:
    the newest version; 0: none) followed by one case per turn."""

    model_config = ConfigDict(extra="forbid")

    turns: list[TurnCase] = Field(min_length=1, max_length=100)
    base: int | None = Field(default=None, ge=0, le=MAX_DATASET_VERSION)


@dataclass(frozen=True)
class Drafted:
    """A case before it is stored: where it was written (``where``, for a 422)."""

    where: str
    case_id: str | None
    input: dict[str, Any]
    assertions: list[Assertion]
    source: dict[str, Any] | None = None


def _check_attachments(d: Drafted) -> None:
    """Each attachment of the case's input is one an upload would take (its content
    type, base64, size: api/service/attachments.py), else 422 naming it."""
    for i, a in enumerate(d.input.get("attachments") or []):
        where = f"{d.where}.input.attachments.{i}"
        try:
            upload = attachments.AttachmentUpload.model_validate(a)
            attachments.decode(upload)
        except ValueError as exc:
            raise RequestInvalid(where, str(exc).splitlines()[0]) from None
        except ServiceError as exc:
            raise RequestInvalid(where, exc.detail()) from None


def _stored(tenant: str, name: str, drafts: Sequence[Drafted]) -> list[dict[str, Any]]:
    """The cases as stored: ids given or ``case-<ordinal>``, unique; every JSON Schema
    an assertion holds checked; secrets sealed, with a salt of the case's place (so the
    same cases hash the same, and a replay finds its version)."""
    out, seen = [], set()
    for n, d in enumerate(drafts, start=1):
        case_id = d.case_id or f"case-{n}"
        if case_id in seen:
            raise RequestInvalid(f"{d.where}.case_id", f"case id {case_id!r} is given twice")
        seen.add(case_id)
        _check_attachments(d)
        sealed = []
        for i, a in enumerate(d.assertions):
            for field, message in verdicts.problems(a):
                raise RequestInvalid(f"{d.where}.assertions.{i}.{field}", message)
            salt = sha256_hex([tenant, name, case_id, i])[:32]
            sealed.append(verdicts.seal(a, salt).model_dump(mode="json"))
        out.append(
            {
                "case_id": case_id,
                "ordinal": n,
                "input": d.input,
                "assertions": sealed,
                "source": d.source,
            }
        )
    return out


def _create(
    services: ApiResources, principal: Principal, name: str, drafts: Sequence[Drafted]
) -> tuple[DatasetRecord, bool]:
    if len(drafts) > MAX_CASES:
        raise RequestInvalid("body.turns", f"a version holds at most {MAX_CASES} cases")
    cases = _stored(principal.tenant, name, drafts)
    return services.store.datasets.create_dataset_version(
        principal.tenant,
        name,
        cases=cases,
        cases_hash=sha256_hex(cases),
        created_by=principal.subject,
    )


def create_version(
    services: ApiResources, principal: Principal, name: str, body: DatasetCreate
) -> tuple[dict[str, Any], bool]:
    """A version with exactly ``body``'s cases (the same cases again: that version)."""
    may_write(principal)
    drafts = [
        Drafted(f"body.cases.{i}", c.case_id, c.input.model_dump(), list(c.assertions))
        for i, c in enumerate(body.cases)
    ]
    record, created = _create(services, principal, name, drafts)
    return version_json(services, record, with_cases=False), created


def _base(
    services: ApiResources, principal: Principal, name: str, base: int | None
) -> list[Drafted]:
    if base == 0:
        return []
    try:
        version = services.store.datasets.get_dataset_version(principal.tenant, name, base)
    except NotFound:
        if base is None:
            return []  # a new dataset
        raise
    return [
        Drafted(f"base.{c.case_id}", c.case_id, c.input, ASSERTIONS.validate_python(c.assertions),
                c.source)
        for c in services.store.datasets.dataset_cases(principal.tenant, name, version.version)
    ]  # fmt: skip


def _from_turn(services: ApiResources, principal: Principal, i: int, t: TurnCase) -> Drafted:
    where = f"body.turns.{i}"
    visible(services, principal, t.session_id, missing="turn not found")
    turn = services.store.reads.get_turn(principal.tenant, t.session_id, t.turn_id)
    messages = [
        {"role": m["role"], "content": m["content"]}
        for m in TurnInput.from_json(turn.input).messages
        if m.get("role") in ("user", "system")
    ]
    assertions = list(t.assertions)
    if t.derive:
        if not turn.state.terminal:
            raise RequestInvalid(where, "the turn has not ended: nothing to derive from")
        events = services.store.reads.turn_events(principal.tenant, t.session_id, t.turn_id)
        done = trajectory(
            events,
            state=turn.state.value,
            result=turn.result,
            error=turn.error,
            usage=turn.usage,
            output_schema=turn.output_schema,
        )
        assertions += derive.derive(done, t.derive)
    files = []
    for aid in TurnInput.from_json(turn.input).attachments:
        try:
            record, data = services.store.attachments.attachment_data(
                principal.tenant, t.session_id, aid
            )
        except StoreError:
            raise RequestInvalid(where, f"the turn's attachment {aid!r} is gone") from None
        files.append(
            {
                "filename": record.filename,
                "content_type": record.content_type,
                "data_base64": base64.b64encode(data).decode("ascii"),
            }
        )
    try:
        case_input = CaseInput.model_validate(
            {"messages": messages, "attachments": files}
        ).model_dump()
    except ValueError:
        raise RequestInvalid(where, "the turn's input is not a case's (no message)") from None
    source = {"session_id": t.session_id, "turn_id": t.turn_id}
    return Drafted(where, t.case_id, case_input, assertions, source)


def add_turns(
    services: ApiResources, principal: Principal, name: str, body: FromTurns
) -> tuple[dict[str, Any], bool]:
    """A new version: ``base``'s cases and one per turn (another tenant's turn, or one
    in another owner's project, is ``NotFound``)."""
    may_write(principal)
    drafts = _base(services, principal, name, body.base)
    drafts += [_from_turn(services, principal, i, t) for i, t in enumerate(body.turns)]
    record, created = _create(services, principal, name, drafts)
    return version_json(services, record, with_cases=False), created


def _case_json(c: CaseRecord) -> dict[str, Any]:
    case = Case.model_validate(
        {
            "case_id": c.case_id,
            "ordinal": c.ordinal,
            "input": c.input,
            "assertions": c.assertions,
            "source": c.source,
        }
    )
    return case.model_dump(mode="json")


def version_json(
    services: ApiResources, d: DatasetRecord, *, with_cases: bool = True
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dataset": d.name,
        "version": d.version,
        "cases_hash": d.cases_hash,
        "case_count": d.case_count,
        "created_by": d.created_by,
        "created_at": d.created_at.isoformat(),
    }
    if with_cases:
        cases = services.store.datasets.dataset_cases(d.tenant_id, d.name, d.version)
        out["cases"] = [_case_json(c) for c in cases]
    return out


def get_version(
    services: ApiResources, principal: Principal, name: str, version: int | None
) -> dict[str, Any]:
    """One version with its cases (None: the newest); ``NotFound`` when there is none."""
    found = services.store.datasets.get_dataset_version(principal.tenant, name, version)
    return version_json(services, found)


def versions(services: ApiResources, principal: Principal, name: str) -> dict[str, Any]:
    found = services.store.datasets.dataset_versions(principal.tenant, name)
    if not found:
        raise NotFound("dataset not found")
    return {
        "dataset": name,
        "versions": [version_json(services, d, with_cases=False) for d in found],
    }


def listing(services: ApiResources, principal: Principal) -> dict[str, Any]:
    return {
        "datasets": [
            {
                "name": d.name,
                "latest_version": d.latest_version,
                "versions": d.versions,
                "updated_at": d.updated_at.isoformat(),
            }
            for d in services.store.datasets.list_datasets(principal.tenant)
        ]
    }
