"""The inbox (issue 27, api/service/inbox.py): ``GET /v1/inbox?state=open`` lists every
open request the caller may answer across the tenant's sessions, each of a group of
approvals asked together on its own, with its binding and expiry; a request only the
runtime answers is no one's; another tenant, or a subject the request is not bound
to, sees none of it; pages follow one another without a gap."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, serve_api
from tests.procs import wait_for


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _parked(api: Api, store: Any, sid: str, agent: str, text: str = "go") -> str:
    r = api.client().post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": text}]},
    )
    assert r.status_code == 202, r.text
    tid = str(r.json()["turn_id"])
    wait_for(
        lambda: store.reads.get_turn(api.tenant_a, sid, tid).awaiting_input, 30, what="turn parked"
    )
    return tid


def _inbox(c: httpx.Client, **params: Any) -> dict[str, Any]:
    r = c.get("/v1/inbox", params={"state": "open", **params})
    assert r.status_code == 200, r.text
    page: dict[str, Any] = r.json()
    return page


def test_the_inbox_lists_what_the_caller_may_answer(
    api: Api, procs: Any, store: Any, sid: str
) -> None:
    procs.worker()
    procs.beat()
    pay = _parked(api, store, f"{sid}-pay", "payroll")
    bank = _parked(api, store, f"{sid}-bank", "banker")
    _parked(api, store, f"{sid}-nap", "sleeper", "nap=600")
    mine = [
        (i["session_id"], i["turn_id"], i["request"]["step"], i["request"]["kind"])
        for i in _inbox(api.client(), limit=500)["inputs"]
        if i["session_id"].startswith(sid)
    ]
    assert mine == [
        (f"{sid}-bank", bank, 2, "approval"),
        (f"{sid}-pay", pay, 2, "approval"),
        (f"{sid}-pay", pay, 3, "approval"),
        (f"{sid}-pay", pay, 4, "approval"),
    ]  # the timer is the runtime's: not listed
    item = next(i for i in _inbox(api.client(), limit=500)["inputs"] if i["turn_id"] == bank)
    assert item["agent"] == "banker" and item["state"] == "waiting"
    assert item["request"]["answered_by"] == {"subject": "alice"} and item["request"]["expires_at"]
    # bound to alice: carol (a member of the tenant) may answer none of them
    carol = [i for i in _inbox(api.client("a-member"), limit=500)["inputs"]]
    assert not any(i["session_id"].startswith(sid) for i in carol)
    assert _inbox(api.client("b"))["inputs"] == []
    # answered, a request leaves the inbox; the rest of its group stays
    rid = next(i["request"]["request_id"] for i in _inbox(api.client(), limit=500)["inputs"]
               if i["turn_id"] == pay)  # fmt: skip
    r = api.client().post(
        f"/v1/sessions/{sid}-pay/turns/{pay}/inputs/{rid}", json={"approved": True}
    )
    assert r.status_code == 200, r.text
    left = [
        i["request"]["step"]
        for i in _inbox(api.client(), limit=500)["inputs"]
        if i["turn_id"] == pay
    ]
    assert left == [3, 4]
    # one turn a page: the pages follow one another, none missed, none twice
    seen, after = [], None
    while True:
        page = _inbox(api.client(), limit=1, **({"after": after} if after else {}))
        seen += [(i["turn_id"], i["request"]["step"]) for i in page["inputs"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert [s for s in seen if s[0] in (pay, bank)] == [(bank, 2), (pay, 3), (pay, 4)]
    assert api.client().get("/v1/inbox", params={"after": "x"}).status_code == 422
