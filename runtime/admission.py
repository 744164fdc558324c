"""What a turn is admitted with: its input, its identity (the input hash), and the
call to the admission statement, made only by the one admission every way in takes
(store/admission.py, which applies the quotas, the TTL and the rest around it).

The input hash is a turn's identity: the same turn id with the same hash is a replay,
with another a conflict. It grew a layer at a time, each added so that a turn without
it keeps the hash it had before: the request (``turnkeep.runtime.hashing.input_hash``: the
messages, the agent's definition hash, the output schema, the budget), then the
attachment references, then the pinned project (``project_hash``), then a
child's delegation link, then a rerun's lineage (runtime/reruns.py), then the metadata
the admission names (runtime/metadata.py).
``identity_hash`` is every layer in that order, and tests/unit/test_admission_hash.py
pins its answers for fixed examples: a change here changes the identity of every
stored turn.

Pure: the statement is passed in (``Store.admit``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from turnkeep.runtime import metadata as labels
from turnkeep.runtime.hashing import input_hash, sha256_hex
from turnkeep.runtime.jsonrecord import JsonRecord, key

R = TypeVar("R")

#: the key of a turn's input that holds its pinned project (runtime/projects.py)
INPUT_KEY = "project"


class TurnInput(JsonRecord, frozen=True):
    """A turn's stored input (``turns.input``, journalled in ``turn.accepted``): the
    messages, and each other part only when there is one. ``from_json``/``to_json``
    give back a stored input exactly (runtime/jsonrecord.py)."""

    OMIT_EMPTY = frozenset({"attachments", "project", "delegation", "rerun"})

    messages: list[dict[str, Any]] = key([])
    #: ids of the session's attachments the turn refers to (api/service/attachments.py)
    attachments: Sequence[str] = key(())
    #: the project's override as it was at admission (``turnkeep.runtime.projects.pinned``)
    project: Mapping[str, Any] | None = key()
    #: a delegated child's link: its parent, its depth, the tools it may use
    delegation: Mapping[str, Any] | None = key()
    #: a rerun's lineage: the turn and step it re-runs from, what was edited, by whom
    #: (runtime/reruns.py ``Lineage``)
    rerun: Mapping[str, Any] | None = key()

    @property
    def project_id(self) -> str | None:
        """The pinned project's id; None for a turn in no project."""
        project = self.project
        return str(project["id"]) if isinstance(project, Mapping) and project.get("id") else None

    @property
    def link(self) -> Mapping[str, Any] | None:
        """A delegated child's link (None for a turn nobody delegated, or a malformed one)."""
        return self.delegation if isinstance(self.delegation, Mapping) else None

    @property
    def depth(self) -> int:
        """How deep in a delegation the turn runs (0: not delegated)."""
        link = self.link
        return int(link.get("depth", 0)) if link is not None else 0

    @property
    def parent(self) -> tuple[str, str] | None:
        """(session, turn) of a delegated child's parent; None for a turn nobody delegated."""
        link = self.link
        if link is None:
            return None
        parent = link.get("parent") or {}
        return str(parent["session_id"]), str(parent["turn_id"])


def project_hash(input_hash: str, project: Mapping[str, Any] | None) -> str:
    """The input hash of a turn in a project: the one without it when there is none (so
    every turn without a project keeps its identity)."""
    if project is None:
        return input_hash
    return sha256_hex(
        {
            "input_hash": input_hash,
            "project": {"id": project["id"], "override_hash": project["override_hash"]},
        }
    )


def identity_hash(
    turn_input: TurnInput,
    *,
    agent_hash: str,
    output_schema: Mapping[str, Any] | None,
    budget: Mapping[str, Any] | None,
    metadata: Mapping[str, str] | None = None,
    session_metadata: Mapping[str, str] | None = None,
) -> str:
    """The turn's input hash: each layer wraps the one before, and only when present."""
    schema = None if output_schema is None else dict(output_schema)
    if turn_input.delegation is not None and not schema:
        # a child's empty schema was always hashed as none (it is stored as given)
        schema = None
    digest = input_hash(
        messages=turn_input.messages,
        agent_hash=agent_hash,
        output_schema=schema,
        budget=None if budget is None else dict(budget),
    )
    if turn_input.attachments:
        digest = sha256_hex({"input_hash": digest, "attachments": list(turn_input.attachments)})
    digest = project_hash(digest, turn_input.project)
    if turn_input.delegation is not None:
        digest = sha256_hex([digest, dict(turn_input.delegation)])
    if turn_input.rerun is not None:
        # who asked and where the context ends are not the request: a replay by
        # another member is the same rerun
        lineage = {k: v for k, v in turn_input.rerun.items() if k not in ("by", "before_seq")}
        digest = sha256_hex([digest, {"rerun": lineage}])
    return labels.identity_layer(digest, metadata, session_metadata)


def admit(
    statement: Callable[[str, dict[str, Any]], R],
    turn_input: TurnInput,
    *,
    agent_hash: str,
    output_schema: Mapping[str, Any] | None,
    budget: Mapping[str, Any] | None,
    metadata: Mapping[str, str] | None = None,
    session_metadata: Mapping[str, str] | None = None,
) -> R:
    """Run the admission statement with ``turn_input``'s identity, hashed here with
    the metadata it names, and its JSON: ``statement(input_hash, input)``."""
    digest = identity_hash(
        turn_input,
        agent_hash=agent_hash,
        output_schema=output_schema,
        budget=budget,
        metadata=metadata,
        session_metadata=session_metadata,
    )
    return statement(digest, turn_input.to_json())
