"""The model's context window: a request budgeted before the call, and compaction that lasts.

A request is estimated conservatively (UTF-8 bytes / 3 per text, plus a small
overhead per message and tool call: English runs near 4 bytes a token, so this
over-counts) against the agent's ``context_window - reserve_output``. Past it, the
worker compacts before sending instead of waiting for the provider's overflow.

A compaction (``context.compacted``) summarises the conversation up to ``to_seq``
and becomes the session's base for every later turn: a turn's context is the newest
summary plus what came after it (runtime/plan.transcript). A history too large for
one summary request is summarised in chunks, each request within the budget, each
chunk folded into the summary so far.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.messages import Message, ModelRequest, Role, estimate

#: the instruction of every summary request; its hash is recorded on the compaction
SUMMARY_PROMPT = (
    "Summarise this conversation so that the work can go on from the summary alone. "
    "Keep every fact, result and open question."
)
PROMPT_HASH = sha256_hex(SUMMARY_PROMPT)
#: the smallest chunk a summary request carries, whatever the budget says
MIN_CHUNK_TOKENS = 64
TRUNCATED = " …[truncated]"


def request_tokens(request: ModelRequest) -> int:
    """Instructions, tool schemas, the output schema (sent as a response format or a
    forced tool) and every message of ``request``."""
    tools = sum(
        estimate(t.name) + estimate(t.description) + estimate(json.dumps(t.parameters))
        for t in request.tools
    )
    schema = 0 if request.output_schema is None else estimate(json.dumps(request.output_schema))
    return estimate(request.instructions) + tools + schema + sum(m.tokens for m in request.messages)


def lines(messages: Sequence[Message]) -> list[str]:
    """The conversation flattened to plain text, one line per message, so a dangling
    tool call cannot make a summary request invalid."""
    out = []
    for m in messages:
        calls = "".join(f" [calls {c.name}({json.dumps(c.arguments)})]" for c in m.tool_calls)
        out.append(f"{m.role.value}: {m.content}{calls}")
    return out


def _clip(line: str, tokens: int) -> str:
    budget = tokens * 3 - len(TRUNCATED.encode())
    raw = line.encode("utf-8")
    if len(raw) <= tokens * 3:
        return line
    return raw[: max(0, budget)].decode("utf-8", errors="ignore") + TRUNCATED


def chunks(text_lines: Sequence[str], tokens: int) -> list[list[str]]:
    """Greedy chunks of whole lines, each at most ``tokens`` (a longer line is clipped)."""
    tokens = max(tokens, MIN_CHUNK_TOKENS)
    out: list[list[str]] = []
    cur: list[str] = []
    size = 0
    for line in text_lines:
        line = _clip(line, tokens)
        cost = estimate(line) + 1
        if cur and size + cost > tokens:
            out.append(cur)
            cur, size = [], 0
        cur.append(line)
        size += cost
    if cur:
        out.append(cur)
    return out


def summary_request(previous: str | None, chunk: Sequence[str]) -> list[Message]:
    """One summary call: the summary so far (if any) and the next chunk of history."""
    before = f"The summary so far:\n{previous}\n\nThe conversation since:\n" if previous else ""
    return [Message(role=Role.USER, content=f"{SUMMARY_PROMPT}\n\n{before}" + "\n".join(chunk))]


def chunk_budget(limit: int, reserve_output: int) -> int:
    """Tokens of history per summary request: the limit less the prompt and the summary
    so far (at most one reply, ``reserve_output``)."""
    return limit - estimate(SUMMARY_PROMPT) - reserve_output - 64
