"""Agents for the integration and chaos tests (TURNKEEP_AGENTS=tests.agents).

The ``count`` tool is idempotent: it dedupes its effect by the context's
idempotency key in a table outside the worker, and logs every call, so tests can
assert that a rerun after a crash happened and that the effect still counted once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from typing import Any

import psycopg

from turnkeep import (
    RECALL_HEADER,
    Agent,
    ContextOverflow,
    Effect,
    ExternalAuthRequired,
    Fallback,
    Limits,
    MemoryScope,
    Message,
    ModelRequest,
    ModelResponse,
    Price,
    PromotionPolicy,
    Role,
    Specialist,
    ToolCall,
    ToolContext,
    UnknownOutcomePolicy,
    ask_tool,
    demo_script,
    followup_tool,
    register_price,
    tool,
    wait_tool,
)
from turnkeep.runtime.demo import AGENTS as DEMO_AGENTS  # the demo agents module

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS test_tool_effects (key text PRIMARY KEY, applied int NOT NULL);
CREATE TABLE IF NOT EXISTS test_tool_calls (key text NOT NULL, pid int NOT NULL,
                                            at timestamptz NOT NULL DEFAULT now());
"""


def _db() -> str:
    return os.environ["TURNKEEP_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")


def _sleep() -> float:
    return float(os.environ.get("TURNKEEP_TEST_TOOL_SLEEP", "0"))


@tool(
    name="count",
    version="1",
    effect=Effect.IDEMPOTENT,
    parameters={
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
    },
)
def count(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Count one effect per idempotency key, however often it is called."""
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_calls (key, pid) VALUES (%s, %s)",
            (ctx.idempotency_key, os.getpid()),
        )
    time.sleep(_sleep())
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_effects (key, applied) VALUES (%s, 1) "
            "ON CONFLICT (key) DO NOTHING",
            (ctx.idempotency_key,),
        )
    return {"counted": args["label"], "key": ctx.idempotency_key}


@tool(
    name="charge",
    version="1",
    effect=Effect.EFFECTFUL,
    # approved by the tests themselves: they exercise the crash paths, not the wait
    approval="never",
    parameters={
        "type": "object",
        "properties": {"amount": {"type": "integer"}},
        "required": ["amount"],
    },
)
def charge(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """An effect that cannot dedupe itself: each call is a new charge."""
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_calls (key, pid) VALUES (%s, %s)",
            (ctx.idempotency_key, os.getpid()),
        )
    time.sleep(_sleep())
    return {"charged": args["amount"]}


def _this_turn(request: ModelRequest) -> list[Message]:
    """Messages from the newest user message on: earlier turns of the session are in
    the context too, and must not count as this turn's progress."""
    users = [i for i, m in enumerate(request.messages) if m.role is Role.USER]
    return list(request.messages[users[-1] :]) if users else list(request.messages)


def _steps_wanted(request: ModelRequest) -> int:
    found = re.search(r"steps=(\d+)", _this_turn(request)[0].content)
    return int(found.group(1)) if found else 1


def _tool_loop(tool_name: str, args: dict[str, Any]) -> Any:
    def script(request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in _this_turn(request) if m.role is Role.TOOL)
        if done < _steps_wanted(request):
            return ModelResponse(
                text=f"calling {tool_name} #{done + 1}",
                tool_calls=(ToolCall(id=f"call_{done + 1}", name=tool_name, arguments=args),),
            )
        errors = sum(1 for m in _this_turn(request) if m.role is Role.TOOL and m.is_error)
        return ModelResponse(text=f"done after {done} calls, {errors} errors")

    return script


demo_script("count-loop")(_tool_loop("count", {"label": "x"}))
# the cost bound (tests/integration/test_cost.py, tests/chaos/test_cost_points.py): a
# demo model priced at $1 an output token, so "calling count #1" costs $5
demo_script("priced-count")(_tool_loop("count", {"label": "x"}))
register_price("demo/priced-count", Price(input=0.001, output=1_000_000.0))
demo_script("charge-loop")(_tool_loop("charge", {"amount": 5}))


@demo_script("json-answer")
def json_answer(request: ModelRequest) -> ModelResponse:
    # the newest user message: earlier turns of the session are in the context too
    last = [m.content for m in request.messages if m.role is Role.USER][-1]
    return ModelResponse(text='{"answer": 42}' if "good" in last else "not json")


@demo_script("memory")
def memory(request: ModelRequest) -> ModelResponse:
    users = [m.content for m in request.messages if m.role is Role.USER]
    return ModelResponse(text=f"seen {len(users)}: " + " | ".join(users))


@demo_script("small-context")
def small_context(request: ModelRequest) -> ModelResponse:
    """A model whose context holds five messages; a summary stands in for the rest."""
    first = request.messages[0].content
    if first.startswith("Summarise") and not request.tools:
        wanted = re.search(r"steps=(\d+)", first)
        before = re.search(r"done=(\d+)", first)  # the summary so far, when rolled over
        done = (int(before.group(1)) if before else 0) + first.count("\ntool: ")
        return ModelResponse(text=f"steps={wanted.group(1) if wanted else 1} done={done}")
    if len(request.messages) > 5:
        raise ContextOverflow("demo context is five messages")
    summary = re.search(r"done=(\d+)", first)
    done = (int(summary.group(1)) if summary else 0) + sum(
        1 for m in _this_turn(request) if m.role is Role.TOOL
    )
    if done < _steps_wanted(request):
        call = ToolCall(id=f"call_{done + 1}", name="count", arguments={"label": "x"})
        return ModelResponse(text=f"count #{done + 1}", tool_calls=(call,))
    return ModelResponse(text=f"done after {done} calls")


@demo_script("overflowing")
def overflowing(request: ModelRequest) -> ModelResponse:
    """A model whose context nothing fits in: only its summary requests succeed."""
    if request.messages[0].content.startswith("Summarise") and not request.tools:
        return ModelResponse(text="a summary")
    raise ContextOverflow("demo context holds nothing")


@tool(
    name="transfer",
    version="1",
    effect=Effect.IDEMPOTENT,
    approval=True,
    parameters={"type": "object", "properties": {"amount": {"type": "integer"}}},
)
def transfer(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Moves money, once per idempotency key, and only after a person approved it."""
    return count.fn(ctx, {"label": f"transfer {args['amount']}"})


ask_name = ask_tool(
    name="ask_name",
    answer_schema={"type": "string", "minLength": 1},
    description="Ask the user for their name.",
)
ask_quickly = ask_tool(name="ask_quickly", answer_schema={"type": "string"}, expires_in=1.0)


def _one_call_then_echo(tool_name: str, args: dict[str, Any]) -> Any:
    def script(request: ModelRequest) -> ModelResponse:
        results = [m for m in _this_turn(request) if m.role is Role.TOOL]
        if not results:
            call = ToolCall(id="call_1", name=tool_name, arguments=args)
            return ModelResponse(text=f"calling {tool_name}", tool_calls=(call,))
        return ModelResponse(
            text=f"{'error' if results[0].is_error else 'ok'}: {results[0].content}"
        )

    return script


demo_script("transfer-once")(_one_call_then_echo("transfer", {"amount": 7}))
demo_script("ask-name")(_one_call_then_echo("ask_name", {"question": "Your name?"}))
demo_script("ask-quickly")(_one_call_then_echo("ask_quickly", {"question": "Quick?"}))


@tool(
    name="pay",
    version="1",
    effect=Effect.EFFECTFUL,  # approval defaults to always for an effectful tool
    parameters={"type": "object", "properties": {"amount": {"type": "integer"}}},
)
def pay(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """An effectful payment: needs a person's approval before every call."""
    return charge.fn(ctx, {"amount": args["amount"]})


def _large(args: dict[str, Any]) -> bool:
    return int(args.get("amount", 0)) > 100


@tool(
    name="tip",
    version="1",
    effect=Effect.IDEMPOTENT,
    approval=_large,
    parameters={"type": "object", "properties": {"amount": {"type": "integer"}}},
)
def tip(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Small tips run at once; large ones wait for approval (a policy of the arguments)."""
    return count.fn(ctx, {"label": f"tip {args['amount']}"})


@tool(name="private_repo", version="1", effect=Effect.READ, answered_by="member")
def private_repo(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Reads a private resource: needs a token it does not hold until someone gives it."""
    if ctx.auth is None:
        raise ExternalAuthRequired("forge", scopes=("repo:read",), message="sign in to the forge")
    token = str(ctx.auth["token"])
    # never echo the credential: the result is journalled
    return f"read with a token of {len(token)} characters"


@tool(
    name="hang",
    version="1",
    effect=Effect.READ,
    timeout=0.5,
    retries=1,
)
def hang(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Never answers in time (the executor abandons it at its timeout)."""
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_calls (key, pid) VALUES (%s, %s)",
            (ctx.idempotency_key, os.getpid()),
        )
    time.sleep(30)
    return "too late"


@tool(
    name="hang_effect",
    version="1",
    effect=Effect.EFFECTFUL,
    approval="never",
    timeout=0.5,
)
def hang_effect(ctx: ToolContext, args: dict[str, Any]) -> str:
    """An effectful call that overruns: its outcome is unknown."""
    time.sleep(30)
    return "too late"


demo_script("pay-once")(_one_call_then_echo("pay", {"amount": 9}))


@demo_script("tip-twice")
def tip_twice(request: ModelRequest) -> ModelResponse:
    """A small tip (runs at once), then a large one (waits for approval), then done."""
    results = [m for m in _this_turn(request) if m.role is Role.TOOL]
    if len(results) < 2:
        amount = 5 if not results else 500
        call = ToolCall(id=f"call_{len(results) + 1}", name="tip", arguments={"amount": amount})
        return ModelResponse(text=f"tipping {amount}", tool_calls=(call,))
    return ModelResponse(text=" | ".join(m.content for m in results))


demo_script("private-read")(_one_call_then_echo("private_repo", {}))


def _test_secret() -> str:
    """The secret of tests/integration/test_redaction.py (also in TURNKEEP_REDACT_VALUES)."""
    return os.environ.get("TURNKEEP_TEST_SECRET", "open sesame")


def leak_key(secret: str) -> str:
    """The API key the ``leaky`` tool returns: of a built-in pattern, derived from the secret."""
    return "sk-ant-api03-" + hashlib.sha256(secret.encode()).hexdigest()[:32]


@tool(
    name="leaky",
    version="1",
    effect=Effect.READ,
    parameters={"type": "object", "properties": {"q": {"type": "string"}}},
)
def leaky(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """A careless tool: returns an API key and the secret, and logs and prints both."""
    secret = _test_secret()
    key = leak_key(secret)
    log.warning("leaky tool saw %s (asked %s)", secret, args.get("q"))
    print(f"leaky tool printed {key}")
    return {"token": key, "note": f"the vault says {secret}", "asked": args.get("q")}


@demo_script("leak")
def leak(request: ModelRequest) -> ModelResponse:
    """Streams the secret (word by word: split across deltas, and across the executor's
    256-character publishes) and an API key, and asks ``leaky`` with the secret."""
    secret = _test_secret()
    results = [m for m in _this_turn(request) if m.role is Role.TOOL]
    if not results:
        call = ToolCall(id="call_1", name="leaky", arguments={"q": secret})
        text = f"{'lorem ' * 40}{secret} with {leak_key(secret)}"
        return ModelResponse(text=text, tool_calls=(call,))
    return ModelResponse(text=f"done: {results[0].content} and {secret}")


demo_script("hang-once")(_one_call_then_echo("hang", {}))
demo_script("hang-effect-once")(_one_call_then_echo("hang_effect", {}))


@tool(
    name="peek",
    version="1",
    effect=Effect.READ,
    parameters={"type": "object", "properties": {"label": {"type": "string"}}},
)
def peek(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """A slow read (``TURNKEEP_TEST_TOOL_SLEEP``, default 1 s), logged like ``count``."""
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_calls (key, pid) VALUES (%s, %s)",
            (ctx.idempotency_key, os.getpid()),
        )
    time.sleep(float(os.environ.get("TURNKEEP_TEST_TOOL_SLEEP", "1")))
    return {"peeked": args.get("label")}


def _three_calls(tool_name: str, arg: str) -> Any:
    """Three calls of ``tool_name`` in one answer (labels a, b, c), then the results."""

    def script(request: ModelRequest) -> ModelResponse:
        results = [m for m in _this_turn(request) if m.role is Role.TOOL]
        if results:
            return ModelResponse(text="|".join(m.content for m in results))
        calls = tuple(ToolCall(id=f"call_{x}", name=tool_name, arguments={arg: x}) for x in "abc")
        return ModelResponse(text="three at once", tool_calls=calls)

    return script


demo_script("peek-three")(_three_calls("peek", "label"))


NAP = wait_tool(name="nap", max_seconds=3600)


@demo_script("nap-once")
def nap_once(request: ModelRequest) -> ModelResponse:
    """``nap=N`` in the user message: wait N seconds (a durable timer), then say so."""
    results = [m for m in _this_turn(request) if m.role is Role.TOOL]
    if results:
        return ModelResponse(text=f"woke: {results[-1].content}")
    found = re.search(r"nap=([\d.]+)", _this_turn(request)[0].content)
    seconds = float(found.group(1)) if found else 1.0
    call = ToolCall(id="call_nap", name="nap", arguments={"seconds": seconds})
    return ModelResponse(text="napping", tool_calls=(call,))


@demo_script("pay-three")
def pay_three(request: ModelRequest) -> ModelResponse:
    """Three payments in one answer (1, 2, 3): their approvals are asked together."""
    results = [m for m in _this_turn(request) if m.role is Role.TOOL]
    if results:
        return ModelResponse(text="|".join(m.content for m in results))
    calls = tuple(ToolCall(id=f"call_{n}", name="pay", arguments={"amount": n}) for n in (1, 2, 3))
    return ModelResponse(text="three payments", tool_calls=calls)


demo_script("count-three")(_three_calls("count", "label"))


@demo_script("delegate")
def delegate(request: ModelRequest) -> ModelResponse:
    """``tasks=a,b,c`` in the user message: hand one task each to the helper specialist
    (``nested`` in it: to the manager itself, whose own delegation is then too deep);
    with the joined result back, answer with it."""
    this = _this_turn(request)
    results = [m for m in this if m.role is Role.TOOL]
    if results:
        return ModelResponse(text="joined: " + results[-1].content)
    user = this[0].content
    found = re.search(r"tasks=([\w,]+)", user)
    if not found:
        return ModelResponse(text="nothing to delegate")
    via = "delegate_again" if "nested" in user else "delegate_helper"
    if "via=scribe" in user:
        via = "delegate_scribe"
    tasks = [{"id": t, "prompt": f"steps=1 task {t}"} for t in found.group(1).split(",")]
    if "nested" in user:
        tasks = [{"id": t, "prompt": f"task {t} tasks=deeper"} for t in found.group(1).split(",")]
    call = ToolCall(id="call_1", name=via, arguments={"tasks": tasks})
    return ModelResponse(text="delegating", tool_calls=(call,))


#: the delegation scenarios (tests/integration/test_delegation.py, the chaos points):
#: ``manager`` hands tasks to ``helper`` (at most 4 a call, 2 at once) or to itself
HELPER = Specialist(
    name="helper",
    agent="helper",
    description="Counts once per task.",
    tools=("count",),
    budget={"max_model_calls": 4},
    max_depth=1,
    max_fanout=4,
    max_concurrent=2,
)
AGAIN = Specialist(name="again", agent="manager", max_depth=1, max_fanout=2)
#: a specialist on the OpenAI wire, one child at a time: its children share one lane
#: (tests/integration/test_delegation.py looks at what each one sends)
SCRIBE = Specialist(
    name="scribe",
    agent="scribe",
    description="Writes one line per task.",
    tools=(),
    max_depth=1,
    max_fanout=4,
    max_concurrent=1,
)

# model policy (tests/integration/test_model_policy.py): served by a local server
# speaking the OpenAI wire format, each model scripted by the test
POLICY_FALLBACK = Fallback(provider="openai", model="policy-fallback", on=("outage",))

AGENTS = [
    *DEMO_AGENTS,
    Agent(
        name="spender",
        version="1",
        provider="demo",
        model="priced-count",
        instructions="Count.",
        tools=(count,),
        limits=Limits(max_cost_usd=12.0),
    ),
    Agent(
        name="policy",
        version="1",
        provider="openai",
        model="policy-primary",
        instructions="Answer.",
        fallbacks=(POLICY_FALLBACK,),
    ),
    Agent(
        name="policy-context-only",
        version="1",
        provider="openai",
        model="policy-primary-2",
        instructions="Answer.",
        fallbacks=(Fallback(provider="openai", model="policy-fallback-2", on=("context",)),),
    ),
    Agent(
        name="policy-json",
        version="1",
        provider="openai",
        model="policy-json",
        instructions="Answer in JSON.",
        output_schema={
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    ),
    Agent(
        name="policy-liar",
        version="1",
        provider="openai",
        model="policy-liar",
        instructions="Answer.",
    ),
    Agent(
        name="helper",
        version="1",
        provider="demo",
        model="count-loop",
        instructions="Count once.",
        tools=(count,),
    ),
    Agent(
        name="manager",
        version="1",
        provider="demo",
        model="delegate",
        instructions="Delegate.",
        tools=(count,),
        specialists=(HELPER, AGAIN, SCRIBE),
    ),
    # parallel tool calls (tests/integration/test_worker.py, tests/chaos/test_parallel_tools.py)
    Agent(
        name="peeker",
        version="1",
        provider="demo",
        model="peek-three",
        instructions="Look three times.",
        tools=(peek,),
    ),
    Agent(
        name="trio",
        version="1",
        provider="demo",
        model="count-three",
        instructions="Count three times.",
        tools=(count,),
    ),
    # reruns (tests/integration/test_reruns.py): on the OpenAI wire, scripted by the test
    Agent(
        name="rerunner",
        version="1",
        provider="openai",
        model="rerun-model",
        instructions="Count, then answer.",
        tools=(count,),
    ),
    Agent(
        name="scribe",
        version="1",
        provider="openai",
        model="scribe-child",
        instructions="Write one line.",
    ),
    Agent(
        name="payer",
        version="1",
        provider="demo",
        model="pay-once",
        instructions="Pay.",
        tools=(pay,),
    ),
    # durable timers (tests/integration/test_timers.py)
    Agent(
        name="sleeper",
        version="1",
        provider="demo",
        model="nap-once",
        instructions="Nap, then answer.",
        tools=(NAP,),
    ),
    # approvals asked together (tests/integration/test_approvals_together.py)
    Agent(
        name="payroll",
        version="1",
        provider="demo",
        model="pay-three",
        instructions="Pay three times.",
        tools=(pay,),
    ),
    Agent(
        name="tipper",
        version="1",
        provider="demo",
        model="tip-twice",
        instructions="Tip.",
        tools=(tip,),
    ),
    Agent(
        name="budgeted",
        version="1",
        provider="demo",
        model="count-loop",
        instructions="Count.",
        tools=(count,),
        limits=Limits(max_tool_calls=1),
        budget_extension=True,
    ),
    Agent(
        name="reader",
        version="1",
        provider="demo",
        model="private-read",
        instructions="Read.",
        tools=(private_repo,),
    ),
    Agent(
        name="leaker",
        version="1",
        provider="demo",
        model="leak",
        instructions="Leak.",
        tools=(leaky,),
    ),
    Agent(
        name="hanger",
        version="1",
        provider="demo",
        model="hang-once",
        instructions="Wait.",
        tools=(hang,),
    ),
    Agent(
        name="hanger-reconcile",
        version="1",
        provider="demo",
        model="hang-effect-once",
        instructions="Wait.",
        tools=(hang_effect,),
        unknown_outcome=UnknownOutcomePolicy.RECONCILE,
        answered_by="admin",
    ),
    Agent(
        name="unprovided",
        version="1",
        provider="no-such-provider",
        model="x",
        instructions="Nothing serves this.",
    ),
    Agent(
        name="counter",
        version="1",
        provider="demo",
        model="count-loop",
        instructions="Count.",
        tools=(count,),
    ),
    # max_running per agent (tests/integration/test_max_running.py)
    Agent(
        name="capped",
        version="1",
        provider="demo",
        model="count-loop",
        instructions="Count.",
        tools=(count,),
        max_running=2,
    ),
    Agent(
        name="charger",
        version="1",
        provider="demo",
        model="charge-loop",
        instructions="Charge.",
        tools=(charge,),
    ),
    Agent(
        name="charger-reconcile",
        version="1",
        provider="demo",
        model="charge-loop",
        instructions="Charge.",
        tools=(charge,),
        unknown_outcome=UnknownOutcomePolicy.RECONCILE,
    ),
    Agent(
        name="banker",
        version="1",
        provider="demo",
        model="transfer-once",
        instructions="Transfer.",
        tools=(transfer,),
    ),
    Agent(
        name="asker",
        version="1",
        provider="demo",
        model="ask-name",
        instructions="Ask.",
        tools=(ask_name,),
    ),
    Agent(
        name="hasty",
        version="1",
        provider="demo",
        model="ask-quickly",
        instructions="Ask.",
        tools=(ask_quickly,),
    ),
    Agent(name="memory", version="1", provider="demo", model="memory", instructions="Remember."),
    Agent(
        name="compactor",
        version="1",
        provider="demo",
        model="small-context",
        instructions="Count.",
        tools=(count,),
    ),
    # served by the local OpenAI-compatible server of tests/integration/test_long_sessions.py
    Agent(
        name="wire-chat",
        version="1",
        provider="openai",
        model="wire-chat-model",
        instructions="Chat.",
        context_window=700,
        reserve_output=100,
    ),
    Agent(
        name="overflowing",
        version="1",
        provider="demo",
        model="overflowing",
        instructions="Nothing fits.",
    ),
    Agent(
        name="json",
        version="1",
        provider="demo",
        model="json-answer",
        instructions="Answer in JSON.",
        output_schema={
            "type": "object",
            "required": ["answer"],
            "properties": {"answer": {"type": "integer"}},
        },
    ),
]


# -- ctx.step (docs/tool-steps.md): tests/integration/test_tool_steps.py and
# tests/chaos/test_tool_step_points.py


@tool(name="two_steps", version="1", effect=Effect.IDEMPOTENT)
def two_steps(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Two durable steps, each logging a row per run of its function in
    ``test_tool_calls`` (key ``<idempotency key>#<step name>``), then the call's own
    effect, deduped by its key as ``count``'s is."""

    def effect(name: str) -> Any:
        def run() -> dict[str, Any]:
            with psycopg.connect(_db(), autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO test_tool_calls (key, pid) VALUES (%s, %s)",
                    (f"{ctx.idempotency_key}#{name}", os.getpid()),
                )
            return {"step": name, "pid": os.getpid()}

        return run

    first = ctx.step("first", effect("first"))
    second = ctx.step("second", effect("second"))
    with psycopg.connect(_db(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_tool_effects (key, applied) VALUES (%s, 1) "
            "ON CONFLICT (key) DO NOTHING",
            (ctx.idempotency_key,),
        )
    return {"first": first, "second": second}


demo_script("two-steps-once")(_one_call_then_echo("two_steps", {}))

AGENTS.append(
    Agent(
        name="stepper",
        version="1",
        provider="demo",
        model="two-steps-once",
        instructions="Step.",
        tools=(two_steps,),
    )
)


# -- durable memory (docs/memory.md): tests/integration/test_memory.py


@demo_script("remember-cat")
def remember_cat(request: ModelRequest) -> ModelResponse:
    """Asked to remember: calls ``remember`` once. Otherwise answers, as JSON, the recall
    notes it was shown and this turn's tool results."""
    import json

    this = _this_turn(request)
    results = [m.content for m in this if m.role is Role.TOOL]
    if "remember" in this[0].content and not results:
        call = ToolCall(id="call_1", name="remember", arguments={"fact": "the user's cat is Tom"})
        return ModelResponse(text="remembering", tool_calls=(call,))
    notes = [
        m.content
        for m in request.messages
        if m.role is Role.USER and m.content.startswith(RECALL_HEADER)
    ]
    return ModelResponse(text=json.dumps({"notes": notes, "results": results}))


AGENTS.append(
    Agent(
        name="rememberer",
        version="1",
        provider="demo",
        model="remember-cat",
        instructions="Remember what matters.",
        memory=MemoryScope.SUBJECT,
    )
)


# -- provider rate limits (docs/flow-control.md): tests/integration/test_rate_limits.py
# and tests/chaos/test_pace_points.py, against tests/ratelimited_server.py (the OpenAI
# wire); a small output cap, so a call books its estimate and 20 tokens
AGENTS.append(
    Agent(
        name="paced",
        version="1",
        provider="openai",
        model="paced-model",
        instructions="Answer in a word.",
        model_options={"max_tokens": 20},
    )
)


# -- follow-up turns (runtime/followups.py): tests/integration/test_followups.py. Asked
# "later:<seconds>:<message>", the model calls follow_up once; any other input it
# answers with what it was asked
@demo_script("follow-up")
def follow_up(request: ModelRequest) -> ModelResponse:
    this = _this_turn(request)
    asked = this[0].content
    results = [m.content for m in this if m.role is Role.TOOL]
    if asked.startswith("later:") and not results:
        _, seconds, message = asked.split(":", 2)
        args = {"in_seconds": float(seconds), "message": message}
        call = ToolCall(id="call_1", name="follow_up", arguments=args)
        return ModelResponse(text="I will come back to it", tool_calls=(call,))
    if results:
        return ModelResponse(text=f"scheduled: {results[0]}")
    return ModelResponse(text=f"followed up: {asked}")


AGENTS.append(
    Agent(
        name="reminder",
        version="1",
        provider="demo",
        model="follow-up",
        instructions="Come back to things later.",
        tools=(followup_tool(),),
    )
)
# -- erasure (docs/erasure.md): tests/integration/test_erasure.py, tests/chaos/


@demo_script("keep-and-count")
def keep_and_count(request: ModelRequest) -> ModelResponse:
    """Asked to remember: calls ``remember`` once, then answers. Else the count loop
    (``steps=N``): one session holds memory facts and a running tool call."""
    this = _this_turn(request)
    if "remember" in this[0].content:
        if not any(m.role is Role.TOOL for m in this):
            call = ToolCall(id="call_1", name="remember", arguments={"fact": "keeper fact 7"})
            return ModelResponse(text="remembering", tool_calls=(call,))
        return ModelResponse(text="remembered")
    return _tool_loop("count", {"label": "x"})(request)


@tool(
    name="get_weather",
    version="1",
    effect=Effect.READ,
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
def get_weather(ctx: ToolContext, args: dict[str, Any]) -> str:
    """The weather a local Anthropic server's scripted answer asks for."""
    return "18C, sunny"


AGENTS += [
    Agent(
        name="keeper",
        version="1",
        provider="demo",
        model="keep-and-count",
        instructions="Remember, or count.",
        tools=(count,),
        memory=MemoryScope.SUBJECT,
    ),
    # speaks Anthropic's Messages wire to TURNKEEP_ANTHROPIC_BASE_URL (a local server
    # in tests/integration/test_provider_state.py), with extended thinking on
    Agent(
        name="thinker",
        version="1",
        provider="anthropic",
        model="claude-sonnet-4-5",
        instructions="Be brief.",
        tools=(get_weather,),
        model_options={"thinking": {"type": "enabled", "budget_tokens": 2048}},
    ),
]


# -- a gated agent (docs/evaluation.md "Promotion"): three versions declared, its default
# the version its tenant last promoted (before any: v1), never merely the last declared.
# Its policy names no dataset, so a promote passes its checks at once; the surfaces'
# tests (tests/integration/test_a2a.py, test_mcp.py, test_api_listings.py) promote v2
# and see each surface describe the version a new turn then gets.
@demo_script("say-instructions")
def say_instructions(request: ModelRequest) -> ModelResponse:
    """Answers with the instructions it was given: which version ran shows."""
    return ModelResponse(text=request.instructions)


def _gated(version: str) -> Agent:
    return Agent(
        name="gated",
        version=version,
        provider="demo",
        model="say-instructions",
        instructions=f"You are gated v{version}.",
    )


AGENTS += [_gated("1"), _gated("2"), _gated("3")]
PROMOTIONS = [PromotionPolicy(agent="gated")]
