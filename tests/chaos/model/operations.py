"""The model's operations, one per plane's verb, each an HTTP request of one tenant
(the bridge's message: a signed POST) or a signal to a process. Each records what it
did in the world, so the invariants know what must hold; none asserts by itself
(an operation refused by the API is counted, not failed: the invariants decide).

``OPERATIONS`` maps each to its weight; ``step`` draws one with the world's seeded
``Random``.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from tests.chaos.model import invariants
from tests.chaos.model.world import (
    ACTIVE,
    BRIDGE_SECRET,
    QUOTA_PER_SESSION,
    WORKERS,
    Probe,
    Schedule,
    World,
)
from turnkeep.runtime import webhooks

#: the backlog a tenant admits at priority 9 in a fairness probe (several times the slots)
BACKLOG = 36
#: how long the fairness probe's turn may take to start before the model goes on
PROBE_WAIT = 30.0


def _any_tenant(w: World) -> Any:
    return w.rng.choice(w.tenants)


def _target(w: World, tenant: str) -> str:
    """An existing live session of the tenant (two in three times) or a new one."""
    live = w.live(tenant)
    if live and w.rng.random() < 0.66:
        return w.rng.choice(live).sid
    return w.new_sid()


def admit(w: World) -> None:
    """A counter turn, with a priority, labels and sometimes a TTL kept for the session."""
    t = _any_tenant(w)
    sid = _target(w, t.name)
    w.admit(
        t,
        sid,
        f"steps={w.rng.randint(1, 3)}",
        priority=w.rng.choice([None, 0, 3, 5, 7, 9]),
        metadata={"kind": w.rng.choice(["a", "b"])},
        expires_after=w.rng.choice([None, None, 3600]),
    )


def ask(w: World) -> None:
    """A turn that waits on a typed question (asker: ask_name)."""
    t = _any_tenant(w)
    w.admit(t, w.new_sid(), "who are you", agent="asker")


def answer(w: World) -> None:
    """Answer a waiting question of one of the tenant's turns."""
    t = _any_tenant(w)
    for s in w.rng.sample(w.live(t.name), min(6, len(w.live(t.name)))):
        for tid in s.turns:
            r = t.http.get(f"/v1/sessions/{s.sid}/turns/{tid}")
            pending = r.json().get("pending_input") if r.status_code == 200 else None
            if pending and pending.get("kind") == "question":
                url = f"/v1/sessions/{s.sid}/turns/{tid}/inputs/{pending['request_id']}"
                w.refused[f"answer {t.http.post(url, json={'answer': 'Ada'}).status_code}"] += 1
                return


def cancel(w: World) -> None:
    t = _any_tenant(w)
    live = [s for s in w.live(t.name) if s.turns]
    if live:
        s = w.rng.choice(live)
        tid = w.rng.choice(s.turns)
        w.refused[
            f"cancel {t.http.post(f'/v1/sessions/{s.sid}/turns/{tid}/cancel').status_code}"
        ] += 1


def _completed(w: World, t: Any) -> list[tuple[str, str]]:
    rows = w.sql(
        "SELECT session_id, turn_id FROM turns t WHERE tenant_id = %s AND state = 'completed'"
        " AND agent_name = 'counter' AND EXISTS (SELECT 1 FROM sessions s WHERE"
        " s.tenant_id = t.tenant_id AND s.session_id = t.session_id AND s.deleted_at IS NULL)"
        " ORDER BY created_at, turn_id",
        (t.name,),
    )
    known = {s.sid for s in w.live(t.name)}
    done = [(sid, tid) for sid, tid in rows if sid in known]
    return w.rng.sample(done, min(20, len(done)))


def rerun(w: World) -> None:
    t = _any_tenant(w)
    done = _completed(w, t)
    if not done:
        return
    sid, tid = w.rng.choice(done)
    new = f"rr-{uuid.uuid4().hex[:12]}"
    r = t.http.post(f"/v1/sessions/{sid}/turns/{tid}/rerun", json={"from_step": 1, "turn_id": new})
    w.refused[f"rerun {r.status_code}"] += 1
    if r.status_code in (200, 202):
        body = r.json()
        w.session(t.name, body.get("session_id", sid)).turns.append(body.get("turn_id", new))


def fork(w: World) -> None:
    t = _any_tenant(w)
    done = _completed(w, t)
    if not done:
        return
    sid, _ = w.rng.choice(done)
    new = w.new_sid("fk")
    r = t.http.post(f"/v1/sessions/{sid}/fork", json={"at_seq": 1, "session_id": new})
    w.refused[f"fork {r.status_code}"] += 1
    if r.status_code in (200, 201, 202):
        # a fork copies the source: its text lives on in the fork (docs/erasure.md)
        w.session(t.name, new).markers |= w.sessions[(t.name, sid)].markers


def delete(w: World) -> None:
    t = _any_tenant(w)
    live = w.live(t.name)
    if live:
        _delete(w, t, w.rng.choice(live).sid)


def _delete(w: World, t: Any, sid: str) -> None:
    r = t.http.delete(f"/v1/sessions/{sid}")
    w.refused[f"delete {r.status_code}"] += 1
    if r.status_code in (200, 202):
        w.session(t.name, sid).deleted = True


def ttl_expiry(w: World) -> None:
    """A session with a short TTL: the sweep erases it once it passes."""
    t = _any_tenant(w)
    sid = w.new_sid("ttl")
    if w.admit(t, sid, "steps=1", expires_after=3).status_code == 202:
        w.session(t.name, sid).expires_by = time.monotonic() + 3


def schedule(w: World) -> None:
    """A session with a TTL (its own or its tenant's), then a schedule ticking into it
    every 2 s."""
    t = _any_tenant(w)
    sid = w.new_sid("sch")
    # its own TTL, or (two tenants) the tenant's default: a tick must keep either
    ttl = w.rng.choice([None, 3600])
    if w.admit(t, sid, "steps=1", expires_after=ttl).status_code != 202:
        return
    sched = f"sc-{uuid.uuid4().hex[:10]}"
    body = {
        "schedule_id": sched,
        "agent": "counter",
        "every_seconds": 2,
        "input": [{"role": "user", "content": f"steps=1 tick {w.marker()}"}],
        "session_id": sid,
    }
    r = t.http.post("/v1/schedules", json=body)
    w.refused[f"schedule {r.status_code}"] += 1
    if r.status_code == 201:
        # the schedule's input is its owner's text (a schedule outlives its session,
        # docs/erasure.md), so its marker is not the session's
        w.schedules.append(Schedule(t.name, sched, sid, 2.0, r.json()["next_at"]))


def pause(w: World) -> None:
    active = [s for s in w.schedules if not s.paused]
    if active:
        s = w.rng.choice(active)
        r = w.tenant(s.tenant).http.post(f"/v1/schedules/{s.schedule_id}/pause")
        w.refused[f"pause {r.status_code}"] += 1
        s.paused = r.status_code == 200 or s.paused


def fill(w: World) -> None:
    """Admissions into a scheduled session up to its quota (then 429s)."""
    live = [s for s in w.schedules if not s.paused and not w.sessions[(s.tenant, s.sid)].deleted]
    if live:
        s = w.rng.choice(live)
        s.filled = True
        for _ in range(QUOTA_PER_SESSION + 2):
            w.admit(w.tenant(s.tenant), s.sid, "steps=4")


def followup(w: World) -> None:
    """A turn in a session with a TTL (its own or its tenant's) whose tool schedules a
    follow-up turn into it."""
    t = _any_tenant(w)
    sid = w.new_sid("fu")
    mark = w.marker()
    ttl = w.rng.choice([None, 3600])
    w.admit(t, sid, f"later:1:{mark}", agent="reminder", expires_after=ttl)
    w.session(t.name, sid).markers.add(mark)


def _unprobed(w: World) -> Any:
    """A tenant whose fairness probe (if any) started: a limit set on a probe's tenant
    before it starts would hold it back for a reason of its own."""
    waiting = {p.light for p in w.probes if not _started(w, p.light, p.probe[1])}
    return w.rng.choice([t for t in w.tenants if t.name not in waiting] or w.tenants)


def _started(w: World, tenant: str, tid: str) -> bool:
    return bool(
        w.sql(
            "SELECT 1 FROM events WHERE tenant_id = %s AND turn_id = %s"
            " AND type = 'turn.started' LIMIT 1",
            (tenant, tid),
        )
    )


def limits(w: World) -> None:
    t = _unprobed(w)
    value = w.rng.choice([1, 2, 3, None])
    r = t.http.put("/v1/limits", json={"max_running": value})
    w.refused[f"limits {r.status_code}"] += 1
    t.limited = True


def hold(w: World) -> None:
    """A tenant limited to one running turn admits turns over several sessions: all
    but one are held (store/held.py) until a slot frees or the limit changes."""
    t = _unprobed(w)
    t.http.put("/v1/limits", json={"max_running": 1})
    t.limited = True
    for _ in range(6):
        w.admit(t, w.new_sid("hd"), "steps=2")


def backlog9(w: World) -> None:
    """A fairness probe: one tenant's backlog at priority 9, then another's turn."""
    heavy, light = w.rng.sample(w.tenants, 2)
    for t in (heavy, light):
        t.http.put("/v1/limits", json={"max_running": None})
    backlog = []
    for _ in range(BACKLOG):
        sid = w.new_sid("bk")
        if w.admit(heavy, sid, "steps=4", priority=9).status_code == 202:
            backlog.append((sid, w.sessions[(heavy.name, sid)].turns[-1]))
    at = w.now_db()
    sid = w.new_sid("pr")
    if w.admit(light, sid, "steps=1").status_code == 202:
        probe = (sid, w.sessions[(light.name, sid)].turns[-1])
        measured = Probe(heavy.name, light.name, backlog, probe, at)
        w.probes.append(measured)
        # the probe is measured before any later operation can delete or limit it: a
        # start bounded by the fairness check (invariants.fairness), or none in time
        deadline = time.monotonic() + PROBE_WAIT
        while time.monotonic() < deadline:
            r = light.http.get(f"/v1/sessions/{sid}/turns/{probe[1]}")
            if r.status_code != 200 or r.json()["state"] != "queued":
                break
            time.sleep(0.1)
        invariants.measure(w, measured)


def dataset(w: World) -> None:
    """Cases made from completed turns (then, often, their session deleted)."""
    t = _any_tenant(w)
    done = _completed(w, t)[:3]
    if not done:
        return
    name = f"ds-{uuid.uuid4().hex[:8]}"
    cases = [{"session_id": s, "turn_id": x} for s, x in done]
    r = t.http.post(f"/v1/datasets/{name}/cases", json={"turns": cases})
    w.refused[f"dataset {r.status_code}"] += 1
    if r.status_code == 201:
        w.datasets.append((t.name, name))
        if w.rng.random() < 0.7:
            _delete(w, t, done[0][0])


def experiment(w: World) -> None:
    """An experiment over a dataset of the tenant; sometimes a case session deleted."""
    if not w.datasets:
        return dataset(w)
    tn, name = w.rng.choice(w.datasets)
    t = w.tenant(tn)
    eid = f"x-{uuid.uuid4().hex[:10]}"
    body = {"dataset": name, "agent": "counter", "concurrency": 2}
    r = t.http.post("/v1/experiments", json=body, headers={"Idempotency-Key": eid})
    w.refused[f"experiment {r.status_code}"] += 1
    if r.status_code != 201:
        return
    deleted = None
    deadline = time.monotonic() + (8 if w.rng.random() < 0.6 else 0)
    while time.monotonic() < deadline:
        # a case whose session is there, not yet ended: delete it under the experiment
        got = t.http.get(f"/v1/experiments/{eid}").json()
        cases = [
            c
            for c in got.get("results") or []
            if c.get("session_id") and c.get("state") == "running"
        ]
        if cases:
            deleted = cases[-1]["session_id"]
            code = t.http.delete(f"/v1/sessions/{deleted}").status_code
            w.refused[f"experiment case delete {code} ({cases[-1].get('state')})"] += 1
            break
        time.sleep(0.3)
    w.experiments.append((tn, eid, deleted))


def delegate(w: World) -> None:
    """A manager delegating four tasks; its last child's session deleted mid-wait."""
    t = _any_tenant(w)
    sid = w.new_sid("dg")
    if w.admit(t, sid, "tasks=a,b,c,d", agent="manager").status_code != 202:
        return
    tid = w.sessions[(t.name, sid)].turns[-1]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = t.http.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        children = ((got.get("pending_input") or {}).get("detail") or {}).get("children")
        if children:
            child = children[-1]["session_id"]
            if t.http.delete(f"/v1/sessions/{child}").status_code in (200, 202):
                w.deleted_children.append((t.name, sid, tid, child))
            return
        if got.get("state") not in ACTIVE:
            return
        time.sleep(0.3)


def bridge(w: World) -> None:
    """A generic-bridge sender bound in one tenant (every channel); another tenant
    binds the same sender on one channel; a signed message on that channel."""
    owner, intruder = w.rng.sample(w.tenants, 2)
    ws, user, channel = f"ws-{owner.name}", f"u-{uuid.uuid4().hex[:6]}", "c1"
    base = {
        "bridge": "generic",
        "workspace": ws,
        "user": user,
        "agent": "counter",
        "reply_url": w.receiver.url,
    }
    r = owner.http.post("/v1/bridges/bindings", json={**base, "channel": "*"})
    w.refused[f"bind {r.status_code}"] += 1
    if r.status_code != 201:
        return
    r = intruder.http.post("/v1/bridges/bindings", json={**base, "channel": channel})
    w.refused[f"bind-other {r.status_code}"] += 1
    message = {
        "workspace": ws,
        "channel": channel,
        "thread": f"th-{uuid.uuid4().hex[:8]}",
        "user": user,
        "message_id": f"m-{uuid.uuid4().hex[:8]}",
        "text": f"steps=1 {w.marker()}",
    }
    raw = json.dumps(message).encode()
    headers = {
        "Content-Type": "application/json",
        "Turnkeep-Signature": webhooks.sign(BRIDGE_SECRET, raw),
    }
    r = httpx.post(f"{w.api.url}/bridges/generic/messages", content=raw, headers=headers)
    got = r.json() if r.status_code == 200 else {}
    w.refused[f"bridge {r.status_code} {got.get('refused') or 'admitted'}"] += 1
    tid = got.get("turn_id")
    if tid:
        w.bridged.append((owner.name, intruder.name, tid))


def kill(w: World) -> None:
    """SIGKILL a worker (the supervisor starts it again); now and then beat too."""
    w.supervisor.proc(w.rng.randrange(WORKERS)).signal(signal.SIGKILL)
    w.kills += 1
    if w.rng.random() < 0.2:
        w.beat.signal(signal.SIGKILL)
        w.beat.popen.wait(10)
        w.beat = w.chaos.procs.beat()
        w.kills += 1


OPERATIONS: dict[Callable[[World], None], int] = {
    admit: 14,
    ask: 2,
    answer: 3,
    cancel: 2,
    rerun: 2,
    fork: 2,
    delete: 3,
    ttl_expiry: 2,
    schedule: 2,
    pause: 1,
    fill: 1,
    followup: 2,
    limits: 3,
    hold: 2,
    backlog9: 1,
    dataset: 2,
    experiment: 2,
    delegate: 2,
    bridge: 1,
    kill: 4,
}


def step(w: World) -> str:
    op = w.rng.choices(list(OPERATIONS), weights=list(OPERATIONS.values()))[0]
    op(w)
    w.ops[op.__name__] += 1
    return op.__name__
