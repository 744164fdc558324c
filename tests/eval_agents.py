"""Agents of the evaluation plane's tests (TURNKEEP_AGENTS=tests.eval_agents): the test
agents of tests/agents.py, and two versions of ``evalbot`` whose scripted models
(demo provider, no network) behave differently on the same cases, a ``judge`` that
always says "pass", ``drillbot``, gated by a policy that asks for a recovery drill, and
``clibot`` (docs/evaluation.md's walk, with the CLI).

A case's user message says what to do: ``task=<name>`` (and ``city=``/``secret=``).
What each version does per task, so a 10-case dataset has known results
(tests/integration/test_evaluation.py ``DATASET``):

=========  ===========================================  ==============================
task       v1                                           v2
=========  ===========================================  ==============================
weather    lookup(city); "It is 20 degrees in <city>."  the same
book       book(city); "Booked <city>."                 lookup(city), book(city); same
wipe       wipe() (needs approval); "Wiped."            "I will not wipe anything."
secret     "Your password is <secret>."                 "I cannot repeat secrets."
json       "not json"                                   '{"answer": 42}'
steps      lookup three times                           lookup once
ping       "pong"                                       "pong"
greet      "Hello!"                                     "Hi."
=========  ===========================================  ==============================
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import psycopg

from tests.agents import AGENTS as TEST_AGENTS
from tests.agents import _db, _this_turn
from turnkeep import (
    Agent,
    Effect,
    ModelRequest,
    ModelResponse,
    PromotionPolicy,
    Role,
    ToolCall,
    ToolContext,
    demo_script,
    tool,
)

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@tool(name="lookup", version="1", effect=Effect.READ, parameters=CITY)
def lookup(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """The weather of a city (always 20 degrees); ``TURNKEEP_TEST_TOOL_SLEEP`` slows it."""
    time.sleep(float(os.environ.get("TURNKEEP_TEST_TOOL_SLEEP", "0")))
    return {"city": args["city"], "celsius": 20}


@tool(name="book", version="1", effect=Effect.IDEMPOTENT, parameters=CITY)
def book(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Books a trip, once per idempotency key (logged in the test tables as count is)."""
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_calls (key, pid) VALUES (%s, %s)",
            (ctx.idempotency_key, os.getpid()),
        )
        conn.execute(
            "INSERT INTO test_tool_effects (key, applied) VALUES (%s, 1) "
            "ON CONFLICT (key) DO NOTHING",
            (ctx.idempotency_key,),
        )
    return {"booked": args["city"]}


@tool(name="wipe", version="1", effect=Effect.EFFECTFUL, parameters={"type": "object"})
def wipe(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Wipes everything: needs a person's approval (effectful)."""
    return {"wiped": True}


def _calls(version: str, task: str, city: str) -> list[tuple[str, dict[str, Any]]]:
    where = {"city": city}
    if task == "weather":
        return [("lookup", where)]
    if task == "book":
        return [("book", where)] if version == "1" else [("lookup", where), ("book", where)]
    if task == "wipe" and version == "1":
        return [("wipe", {})]
    if task == "steps":
        return [("lookup", where)] * (3 if version == "1" else 1)
    return []


def _answer(version: str, task: str, city: str, secret: str) -> str:
    answers = {
        "weather": f"It is 20 degrees in {city}.",
        "book": f"Booked {city}.",
        "wipe": "Wiped." if version == "1" else "I will not wipe anything.",
        "secret": f"Your password is {secret}." if version == "1" else "I cannot repeat secrets.",
        "json": "not json" if version == "1" else '{"answer": 42}',
        "steps": "Looked three times." if version == "1" else "Looked once.",
        "greet": "Hello!" if version == "1" else "Hi.",
    }
    return answers.get(task, "pong")


def _word(pattern: str, text: str, default: str) -> str:
    found = re.search(pattern, text)
    return found.group(1) if found else default


def _evalbot(version: str) -> Any:
    def script(request: ModelRequest) -> ModelResponse:
        this = _this_turn(request)
        user = this[0].content
        task, city = _word(r"task=(\w+)", user, "ping"), _word(r"city=(\w+)", user, "Nowhere")
        secret = _word(r"secret=(\S+)", user, "")
        done = sum(1 for m in this if m.role is Role.TOOL)
        calls = _calls(version, task, city)
        if done < len(calls):
            name, args = calls[done]
            call = ToolCall(id=f"call_{done + 1}", name=name, arguments=args)
            return ModelResponse(text=f"calling {name}", tool_calls=(call,))
        return ModelResponse(text=_answer(version, task, city, secret))

    return script


demo_script("evalbot-v1")(_evalbot("1"))
demo_script("evalbot-v2")(_evalbot("2"))


@demo_script("judge-pass")
def judge_pass(request: ModelRequest) -> ModelResponse:
    """A judge that finds every answer right."""
    return ModelResponse(text='{"verdict": "pass", "score": 1.0, "reason": "looks right"}')


def _bot(name: str, version: str) -> Agent:
    return Agent(
        name=name,
        version=version,
        provider="demo",
        model=f"evalbot-v{version}",
        instructions="Help with trips.",
        tools=(lookup, book, wipe),
    )


AGENTS = [
    *TEST_AGENTS,
    _bot("evalbot", "1"),
    _bot("evalbot", "2"),
    _bot("drillbot", "1"),
    _bot("drillbot", "2"),
    _bot("clibot", "1"),
    _bot("clibot", "2"),
    # not gated: its latest (v2) is the default, and its turns move to it (on_deploy)
    _bot("tripbot", "1"),
    _bot("tripbot", "2"),
    Agent(name="judge", version="1", provider="demo", model="judge-pass", instructions="Judge."),
]

#: evalbot, drillbot and clibot are gated: their default changes only through promote
PROMOTIONS = [
    PromotionPolicy(
        agent="evalbot", datasets=("evalbot-core",), min_pass_rate=0.8, max_regression=0.05
    ),
    PromotionPolicy(agent="drillbot", datasets=("drill-core",), min_pass_rate=0.8, recovery=True),
    # the walk of docs/evaluation.md, with the CLI (tests/integration/test_evaluation.py)
    PromotionPolicy(agent="clibot", datasets=("cli-core",), min_pass_rate=0.8, max_regression=0.05),
]
