"""A dataset's cases and their assertions, typed once (docs/evaluation.md): what a
client writes, what the API validates (422 for a bad one) and stores, and what the
runtime evaluates against a turn's committed journal (runtime/evaluation/).

An assertion is one of a closed set of kinds, told apart by ``kind`` (a discriminated
union), in three categories:

- trajectory: ``tool_called`` (at least ``times`` calls, optionally whose arguments
  match a JSON Schema), ``tool_not_called``, ``tool_order`` (these tools, in this
  order, others between allowed), ``at_most`` (steps, model calls, tool calls, tokens
  or cost), ``outcome`` (the turn's end state and error code);
- output: ``output_valid`` (the output validates a JSON Schema: the given one, else
  the turn's own), ``output_contains``, ``output_matches`` (a regular expression),
  ``output_equals`` (JSON equality with the output, or the text);
- none-of: ``never_called`` (a tool that must never run) and ``never_appears`` (a
  secret that must appear nowhere in the turn's journal or output). The secret is
  never stored: the API keeps a salted SHA-256 of it and its length (``sealed``), and
  the check hashes every window of that length of the turn's text.

A leaf: pydantic and the standard library only (a client install has both).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: a case's id within its dataset (no dot: the case's session id is
#: ``eval.<experiment>.<case>``, runtime/evaluation/ids.py)
CASE_ID = r"^[A-Za-z0-9_-]{1,48}$"
#: a tool name as an assertion names it
ToolName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00]+$")]
#: what ``at_most`` bounds
Measure = Literal["steps", "model_calls", "tool_calls", "tokens", "cost_usd"]
Category = Literal["trajectory", "output", "none_of"]
#: the most assertions one case may carry, and cases one dataset version
MAX_ASSERTIONS = 50
MAX_CASES = 1000
#: the longest regular expression ``output_matches`` takes, and the most characters of
#: an output it is run against (Python's ``re`` has no timeout: both are bounded)
MAX_PATTERN = 500
MAX_MATCHED = 100_000


class _Assertion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCalled(_Assertion):
    """The tool was called at least ``times`` times (with ``arguments``: that many of
    its calls' arguments validate that JSON Schema)."""

    kind: Literal["tool_called"] = "tool_called"
    tool: ToolName
    times: int = Field(default=1, ge=1, le=1000)
    arguments: dict[str, Any] | None = None


class ToolNotCalled(_Assertion):
    """The tool was never called."""

    kind: Literal["tool_not_called"] = "tool_not_called"
    tool: ToolName


class ToolOrder(_Assertion):
    """These tools were called in this order (other calls may come between)."""

    kind: Literal["tool_order"] = "tool_order"
    tools: list[ToolName] = Field(min_length=2, max_length=50)


class AtMost(_Assertion):
    """The turn took at most ``max`` steps, model calls, tool calls, tokens or USD."""

    kind: Literal["at_most"] = "at_most"
    of: Measure
    max: float = Field(ge=0, le=1e12, allow_inf_nan=False)


class Outcome(_Assertion):
    """The turn ended ``state`` (and, given, with error ``code``)."""

    kind: Literal["outcome"] = "outcome"
    state: Literal["completed", "failed", "cancelled"]
    code: str | None = Field(default=None, min_length=1, max_length=100)


class OutputValid(_Assertion):
    """The turn completed with an output that validates ``output_schema`` (absent: the
    schema the turn was admitted with; with none, the output must be JSON)."""

    kind: Literal["output_valid"] = "output_valid"
    output_schema: dict[str, Any] | None = None


class OutputContains(_Assertion):
    """The final answer's text contains ``text``."""

    kind: Literal["output_contains"] = "output_contains"
    text: str = Field(min_length=1, max_length=10_000)
    ignore_case: bool = False


class OutputMatches(_Assertion):
    """The final answer's text has a match of the regular expression ``pattern``."""

    kind: Literal["output_matches"] = "output_matches"
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


class OutputEquals(_Assertion):
    """The output (the parsed JSON of a turn with an output schema, else the text)
    equals ``value``."""

    kind: Literal["output_equals"] = "output_equals"
    value: Any


class NeverCalled(_Assertion):
    """None-of: the tool never ran (security: a tool this case must never reach)."""

    kind: Literal["never_called"] = "never_called"
    tool: ToolName


class NeverAppears(_Assertion):
    """None-of: a secret appears nowhere in the turn's journal or output. Written with
    ``secret``; stored and answered sealed (``salt``, ``digest``, ``length``), the
    secret itself never kept."""

    kind: Literal["never_appears"] = "never_appears"
    secret: str | None = Field(default=None, min_length=4, max_length=1000)
    salt: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")
    digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    length: int | None = Field(default=None, ge=4, le=1000)

    @model_validator(mode="after")
    def _one_form(self) -> NeverAppears:
        sealed = (self.salt, self.digest, self.length)
        if self.secret is not None and any(v is not None for v in sealed):
            raise ValueError("give the secret, or its sealed form, not both")
        if self.secret is None and any(v is None for v in sealed):
            raise ValueError("give the secret (or salt, digest and length)")
        return self

    @property
    def sealed(self) -> bool:
        return self.secret is None


Assertion = Annotated[
    ToolCalled
    | ToolNotCalled
    | ToolOrder
    | AtMost
    | Outcome
    | OutputValid
    | OutputContains
    | OutputMatches
    | OutputEquals
    | NeverCalled
    | NeverAppears,
    Field(discriminator="kind"),
]

#: each kind's category (the promotion gate reads ``none_of``)
CATEGORIES: dict[str, Category] = {
    "tool_called": "trajectory",
    "tool_not_called": "trajectory",
    "tool_order": "trajectory",
    "at_most": "trajectory",
    "outcome": "trajectory",
    "output_valid": "output",
    "output_contains": "output",
    "output_matches": "output",
    "output_equals": "output",
    "never_called": "none_of",
    "never_appears": "none_of",
}


def category(assertion: Assertion) -> Category:
    return CATEGORIES[assertion.kind]


def has_nul(value: Any) -> bool:
    """Whether a JSON value holds U+0000 in a string or a key (Postgres stores neither)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class CaseMessage(BaseModel):
    """One message of a case's input, as a turn's input has it."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "system"]
    content: str = Field(min_length=1, max_length=100_000, pattern=r"^[^\x00]*$")


#: the most attachments one case's input holds (as a turn's: api/service/requests.py)
MAX_CASE_ATTACHMENTS = 16


class CaseAttachment(BaseModel):
    """A file a case's turn is admitted with: uploaded to the case's session before its
    turn runs, under the id ``att-<position>`` (what the turn's input names). The
    content types and size an upload takes (api/service/attachments.py)."""

    model_config = ConfigDict(extra="forbid")

    filename: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00]*$")
    content_type: str = Field(min_length=1, max_length=255)
    #: standard base64, padded
    data_base64: str = Field(max_length=262_144)


class CaseInput(BaseModel):
    """What a case's turn is admitted with."""

    model_config = ConfigDict(extra="forbid")

    messages: list[CaseMessage] = Field(min_length=1, max_length=100)
    attachments: list[CaseAttachment] = Field(default_factory=list, max_length=MAX_CASE_ATTACHMENTS)

    @staticmethod
    def attachment_id(position: int) -> str:
        """The id of the case's ``position``-th attachment (from 0) in its session."""
        return f"att-{position + 1}"


class CaseSource(BaseModel):
    """The real turn a case was made from (``POST /v1/datasets/{name}/cases``)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    turn_id: str


class CaseSpec(BaseModel):
    """A case as a client writes it: an input and what its turn must show.
    ``case_id``: unique in the dataset version (absent: ``case-<position>``)."""

    model_config = ConfigDict(extra="forbid")

    case_id: str | None = Field(default=None, pattern=CASE_ID)
    input: CaseInput
    assertions: list[Assertion] = Field(default_factory=list, max_length=MAX_ASSERTIONS)

    @model_validator(mode="after")
    def _storable(self) -> CaseSpec:
        if has_nul(self.model_dump(mode="json")):
            raise ValueError("must not contain U+0000 (NUL)")
        return self


class Case(BaseModel):
    """A case of a dataset version as it is stored and answered (a ``never_appears``
    sealed)."""

    model_config = ConfigDict(extra="allow")

    case_id: str
    #: its place in the version, from 1
    ordinal: int
    input: CaseInput
    assertions: list[Assertion] = []
    source: CaseSource | None = None
