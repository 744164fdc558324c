"""A session's Redis holders (docs/erasure.md "The registry"), with the real API, Redis
and worker processes: an external_auth credential is handed to the tool only by the
answer that was recorded (a racer refused at the record never overwrites it), and an
erasure leaves no key or value of the session in the deployment's namespace, a
credential still waiting for its tool included.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from tests.integration.api_server import Api, serve_api
from tests.procs import Procs, wait_for
from turnkeep.runtime.obs import faults
from turnkeep.store.fair import FairQueue
from turnkeep.store.held import HeldSessions, Scope
from turnkeep.store.session_keys import SessionKeys

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _submit(c: httpx.Client, sid: str) -> str:
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "reader", "input": [{"role": "user", "content": "go"}]},
    )
    assert r.status_code == 202, r.text
    tid: str = r.json()["turn_id"]
    return tid


def _waiting(c: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    def get() -> dict[str, Any] | None:
        t: dict[str, Any] = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] == "waiting" else None

    found: dict[str, Any] = wait_for(get, 60, what="the turn waits for credentials")
    return found["pending_input"]


def _answer(c: httpx.Client, sid: str, tid: str, rid: str, token: str) -> httpx.Response:
    return c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"token": token})


def test_a_refused_racer_never_overwrites_the_winners_credential(api: Api, procs: Procs) -> None:
    """Two members answer one request at once; both pass the checks, the first records.
    The tool runs with the first one's token (its length tells which)."""
    c, member = api.client(), api.client("a-member")
    sid = f"s-race-{uuid.uuid4().hex[:8]}"
    procs.worker()
    tid = _submit(c, sid)
    rid = _waiting(c, sid, tid)["request_id"]
    winner, loser = "w" * 11, "l" * 23
    answers: dict[str, int] = {}

    def answer(token: str) -> None:
        answers[token] = _answer(member, sid, tid, rid, token).status_code

    # both answers are held after their checks, before the record: the first recorded
    # wins, the other is refused at the record
    faults.arm("before_answer=sleep:2")
    try:
        first = threading.Thread(target=answer, args=(winner,))
        second = threading.Thread(target=answer, args=(loser,))
        first.start()
        time.sleep(0.5)  # the second request starts while the first is held
        second.start()
        first.join(30)
        second.join(30)
    finally:
        faults.arm("")
    # the loser is refused at the record: 409, or 404 once the winner's turn ended
    assert answers[winner] == 200 and answers[loser] in (404, 409), answers

    def settled() -> dict[str, Any] | None:
        t: dict[str, Any] = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] in ("completed", "failed", "cancelled") else None

    done = wait_for(settled, 60, what="the turn settled")
    assert done["result"]["text"] == "ok: read with a token of 11 characters"


def _namespace(client: redis.Redis, prefix: str) -> str:
    """Every key of the namespace and its value, as text."""
    out = []
    for raw in client.scan_iter(match=f"{prefix}*", count=1000):
        key = raw.decode()
        kind = client.type(raw).decode()
        if kind == "string":
            value: Any = client.get(raw)
        elif kind == "hash":
            value = client.hgetall(raw)
        elif kind == "set":
            value = client.smembers(raw)
        elif kind == "zset":
            value = client.zrange(raw, 0, -1)
        elif kind == "list":
            value = client.lrange(raw, 0, -1)
        else:
            value = kind
        out.append(f"{key} {value!r}")
    return "\n".join(out)


def test_an_erasure_leaves_nothing_of_the_session_in_redis(
    api: Api, procs: Procs, service_env: dict[str, str]
) -> None:
    """A credential answered while no worker runs waits in Redis for its tool; the
    session is deleted: once erased, no key of the namespace names it, and no value
    holds it or the credential."""
    c, member = api.client(), api.client("a-member")
    sid = f"s-keys-{uuid.uuid4().hex[:8]}"
    token = f"tok-{uuid.uuid4().hex}"
    worker = procs.worker()
    tid = _submit(c, sid)
    rid = _waiting(c, sid, tid)["request_id"]
    worker.stop()
    assert _answer(member, sid, tid, rid, token).status_code == 200
    client = redis.Redis.from_url(service_env["TURNKEEP_REDIS_URL"])
    prefix = service_env["TURNKEEP_REDIS_PREFIX"]
    assert token in _namespace(client, prefix)  # waiting for the tool

    assert c.delete(f"/v1/sessions/{sid}").status_code == 202
    procs.worker()

    def erased() -> bool:
        r = c.delete(f"/v1/sessions/{sid}")
        return r.status_code == 200

    wait_for(erased, 90, interval=0.3, what="the erasure finished")
    # the worker's own run of the session (sent by the answer) found it gone
    wait_for(lambda: sid not in _namespace(client, prefix), 30, what="no key names it")
    text = _namespace(client, prefix)
    assert token not in text and sid not in text


def test_an_erasure_takes_the_session_out_of_its_tenants_held_and_ready_sets(
    redis_url: str,
) -> None:
    """The tenant's shared sets (held by a max_running, ready for a ticket) lose the
    erased session's id and keep the rest; a tenant whose id begins with this one's,
    holding a session of the same id, keeps it (the registry's globs end at a ':')."""
    client = redis.Redis.from_url(redis_url)
    tenant, sid = f"t-{uuid.uuid4().hex[:6]}", "s-shared"
    other = tenant + "x"
    held = HeldSessions(client)
    fair = FairQueue(client, f"q-{uuid.uuid4().hex[:6]}")
    for t in (tenant, other):
        for scope in (Scope(t), Scope(t, "counter")):
            held.hold(scope, sid)
            held.hold(scope, "s-stays")
        fair.submit(t, sid, priority=9)
        fair.submit(t, "s-stays")
    SessionKeys(client).erase(tenant, sid)
    for scope in (Scope(tenant), Scope(tenant, "counter")):
        assert held.held(scope) == {"s-stays"}
    for scope in (Scope(other), Scope(other, "counter")):
        assert held.held(scope) == {sid, "s-stays"}
    picked = sorted(p for p in iter(fair.pick, None))
    assert picked == sorted([(tenant, "s-stays"), (other, sid), (other, "s-stays")])
