"""Two builds of one agents module, for a rolling deploy (tests/chaos/test_rolling_deploy.py,
tests/chaos/test_deploy_points.py): ``build_a`` is what runs before it, ``build_b``
after. Between them the prompts change (so do the definition hashes), the tools do
not: a call asked for under a build A definition is the same call under build B's.

``support`` and ``ledger`` move to the newest version at a safe point (``upgrade``,
the default); ``keeper`` is ``pinned``, and build B serves its version 1 beside 2.
The one model script calls the tool the user's text names (``tool=stamp``) once,
then answers with the instructions it was sent, which say the version: a turn's
answer tells which definition made its last model call.
"""

from __future__ import annotations

import re
from typing import Any

from tests.agents import charge, count
from turnkeep import (
    Agent,
    Effect,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    ToolContext,
    UnknownOutcomePolicy,
    demo_script,
    tool,
)


@tool(
    name="stamp",
    version="1",
    effect=Effect.IDEMPOTENT,
    approval=True,
    parameters={
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
    },
)
def stamp(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """An approved call, counted like ``count`` (once per idempotency key)."""
    return count.fn(ctx, args)


_ARGS = {"count": {"label": "x"}, "stamp": {"label": "x"}, "charge": {"amount": 5}}


@demo_script("deploy-script")
def _script(request: ModelRequest) -> ModelResponse:
    users = [i for i, m in enumerate(request.messages) if m.role is Role.USER]
    this_turn = request.messages[users[-1] :]
    found = re.search(r"tool=(\w+)", this_turn[0].content)
    name = found.group(1) if found else "count"
    if not any(m.role is Role.TOOL for m in this_turn):
        call = ToolCall(id="call_1", name=name, arguments=_ARGS[name])
        return ModelResponse(text=f"calling {name}", tool_calls=(call,))
    return ModelResponse(text=f"answered by {request.instructions}")


def support(version: str) -> Agent:
    return Agent(
        name="support",
        version=version,
        provider="demo",
        model="deploy-script",
        instructions=f"support v{version}",
        tools=(count, stamp),
    )


def keeper(version: str) -> Agent:
    return Agent(
        name="keeper",
        version=version,
        provider="demo",
        model="deploy-script",
        instructions=f"keeper v{version}",
        tools=(count, stamp),
        on_deploy="pinned",
    )


def ledger(version: str) -> Agent:
    return Agent(
        name="ledger",
        version=version,
        provider="demo",
        model="deploy-script",
        instructions=f"ledger v{version}",
        tools=(charge,),
        unknown_outcome=UnknownOutcomePolicy.RECONCILE,
    )
