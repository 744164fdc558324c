"""Traces end to end (runtime/obs/tracing.py): the real API and a real celery worker export
OTLP/HTTP to a local receiver. One turn is one trace, whose id is derived from the
turn's ids: the admission is its root, the worker's attempt a child of it, every step
a child of the attempt and every checkpoint a child of its step; the spans carry the
durable ids as attributes and nothing of the conversation."""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.integration.api_server import session_at
from tests.procs import Procs, wait_for
from turnkeep.api.auth import token_digest

TOKEN = f"tk-tracing-{uuid.uuid4().hex}"
#: in the prompt: it must be found nowhere in what is exported
PROMPT = f"steps=1 secret-prompt-{uuid.uuid4().hex}"


class Receiver:
    """An OTLP/HTTP collector for traces: keeps every request body and its spans."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        #: (service.name, span) for every span received
        self.spans: list[tuple[str, Any]] = []
        #: every request the receiver could not take (a path other than the traces
        #: one, a body that is no export request): kept for the test's thread to
        #: assert on (``check``), since an assert raised in the server's thread is
        #: printed and swallowed, and the test would pass
        self.problems: list[str] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    if self.headers.get("Content-Encoding") == "gzip":
                        raw = gzip.decompress(raw)
                    receiver.take(self.path, raw)
                except Exception as exc:
                    with receiver.lock:
                        receiver.problems.append(f"POST {self.path}: {exc!r}")
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def take(self, path: str, raw: bytes) -> None:
        if path != "/v1/traces":
            raise ValueError("not the OTLP traces path")
        request = ExportTraceServiceRequest.FromString(raw)
        with self.lock:
            self.bodies.append(raw)
            for rs in request.resource_spans:
                service = next(
                    a.value.string_value for a in rs.resource.attributes if a.key == "service.name"
                )
                for ss in rs.scope_spans:
                    self.spans.extend((service, s) for s in ss.spans)

    #: when set, only spans of this trace count (for a test that makes several)
    trace_id: bytes = b""

    def check(self) -> None:
        """Every request so far was an OTLP traces export (on the test's thread)."""
        with self.lock:
            assert self.problems == [], self.problems
            assert self.bodies, "no export request arrived"

    def named(self, name: str) -> list[tuple[str, Any]]:
        with self.lock:
            return [
                (svc, s)
                for svc, s in self.spans
                if s.name == name and (not self.trace_id or s.trace_id == self.trace_id)
            ]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()
    with r.lock:
        assert r.problems == [], r.problems  # whatever arrived after the test's own check


def attrs(span: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    for a in span.attributes:
        v = a.value
        out[a.key] = v.int_value if v.HasField("int_value") else v.string_value
    return out


def test_one_turn_is_one_trace_from_admission_to_every_step(
    procs: Procs, receiver: Receiver, tenant: str, sid: str
) -> None:
    otel = {"TURNKEEP_OTEL_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    tokens = [{"sha256": token_digest(TOKEN), "tenant": tenant, "subject": "ops"}]
    api = procs.api({**otel, "TURNKEEP_TOKENS": json.dumps(tokens)})
    procs.worker(otel)
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = c.post(
            f"/v1/sessions/{sid}/turns",
            json={"agent": "counter", "input": [{"role": "user", "content": PROMPT}]},
        )
        assert r.status_code == 202, r.text
        tid = r.json()["turn_id"]
        turn = c.get(f"/v1/sessions/{sid}/turns/{tid}", params={"wait": 20}).json()
        assert turn["state"] == "completed", turn

    # every span that arrived (nothing else runs against this module's database and
    # queue): model, tool, model; each step's checkpoint, the last one settling the turn
    want = {
        "turnkeep.admit": 1,
        "turnkeep.run_session": 1,
        "turnkeep.model": 2,
        "turnkeep.tool": 1,
        "turnkeep.checkpoint": 3,
    }

    def arrived() -> bool:
        return all(len(receiver.named(name)) >= n for name, n in want.items())

    try:
        # batches go out every 100 ms; a loaded machine (the whole suite at once) may
        # take a while to export them
        wait_for(arrived, 60, interval=0.1, what="the turn's spans at the receiver")
    except AssertionError:
        got = {name: len(receiver.named(name)) for name in want}
        raise AssertionError(
            f"spans by name: {got}, wanted {want}; refused: {receiver.problems}"
        ) from None
    # exactly these: no second attempt, no step twice
    assert {name: len(receiver.named(name)) for name in want} == want

    digest = hashlib.sha256(f"{tenant}/{sid}/{tid}".encode()).digest()
    trace_id, root_id = digest[:16], digest[16:24]
    [(api_service, admit)] = receiver.named("turnkeep.admit")
    [(worker_service, run)] = receiver.named("turnkeep.run_session")
    assert (api_service, worker_service) == ("turnkeep-api", "turnkeep-worker")
    steps = receiver.named("turnkeep.model") + receiver.named("turnkeep.tool")
    checkpoints = receiver.named("turnkeep.checkpoint")
    every = [admit, run, *(s for _, s in steps), *(s for _, s in checkpoints)]
    assert {s.trace_id for s in every} == {trace_id}

    # admission -> attempt -> steps -> checkpoints
    assert admit.span_id == root_id and admit.parent_span_id == b""
    assert run.parent_span_id == admit.span_id
    assert {s.parent_span_id for _, s in steps} == {run.span_id}
    assert sorted(c.parent_span_id for _, c in checkpoints) == sorted(s.span_id for _, s in steps)

    ids = {"turnkeep.tenant": tenant, "turnkeep.session": sid, "turnkeep.turn": tid}
    assert ids.items() <= attrs(admit).items()
    assert attrs(admit)["turnkeep.surface"] == "http"
    assert attrs(admit)["turnkeep.admission"] == "created"
    run_attrs = attrs(run)
    assert ids.items() <= run_attrs.items()
    assert run_attrs["turnkeep.attempt"] == 1 and run_attrs["turnkeep.agent"] == "counter"
    assert isinstance(run_attrs["turnkeep.fence"], int) and run_attrs["turnkeep.fence"] >= 1
    assert run_attrs["turnkeep.state"] == "completed"
    assert sorted(attrs(s)["turnkeep.step"] for _, s in steps) == [1, 2, 3]
    assert attrs(receiver.named("turnkeep.tool")[0][1])["turnkeep.tool"] == "count"
    seqs = sorted(attrs(c)["turnkeep.seq"] for _, c in checkpoints)  # type: ignore[type-var]
    assert len(set(seqs)) == 3
    events = sorted(str(attrs(c)["turnkeep.event"]) for _, c in checkpoints)
    assert events == ["model.completed", "model.completed", "tool.completed"]

    # nothing of the conversation: not the prompt, the model's words or the answer
    payload = b"".join(receiver.bodies)
    for text in (PROMPT, "secret-prompt", "calling count", "done after", "counted"):
        assert text.encode() not in payload, text
    receiver.check()


def test_an_mcp_admission_and_a_replay_are_spans_of_the_turns_trace(
    procs: Procs, receiver: Receiver, tenant: str, sid: str
) -> None:
    """Admissions are traced on the submit path every surface shares: one through the
    official MCP client is its turn's root as an HTTP one is; a replay is a child."""
    otel = {"TURNKEEP_OTEL_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    tokens = [{"sha256": token_digest(TOKEN), "tenant": tenant, "subject": "ops"}]
    api = procs.api({**otel, "TURNKEEP_TOKENS": json.dumps(tokens)})
    procs.worker(otel)

    async def over_mcp() -> dict[str, Any]:
        async with session_at(api.url, TOKEN) as session:
            result = await session.call_tool("counter", {"prompt": PROMPT, "session_id": sid})
            assert not result.is_error and result.structured_content is not None
            return dict(result.structured_content)

    turn = anyio.run(over_mcp)
    assert turn["state"] == "completed", turn
    digest = hashlib.sha256(f"{tenant}/{sid}/{turn['turn_id']}".encode()).digest()
    receiver.trace_id = digest[:16]
    wait_for(
        lambda: receiver.named("turnkeep.admit") and receiver.named("turnkeep.run_session"),
        60,
        interval=0.1,
        what="the MCP turn's admission and attempt spans",
    )
    [(service, admit)] = receiver.named("turnkeep.admit")
    [(_, run)] = receiver.named("turnkeep.run_session")
    assert service == "turnkeep-api"
    assert admit.span_id == digest[16:24] and admit.parent_span_id == b""
    assert run.parent_span_id == admit.span_id
    assert attrs(admit)["turnkeep.surface"] == "mcp"
    assert attrs(admit)["turnkeep.turn"] == turn["turn_id"]

    # over HTTP: the same key twice; the second answer is a replay, a child of the root
    other = f"{sid}-http"
    body = {"agent": "counter", "input": [{"role": "user", "content": PROMPT}]}
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        key = {"Idempotency-Key": f"replayed-{uuid.uuid4().hex[:8]}"}
        assert c.post(f"/v1/sessions/{other}/turns", json=body, headers=key).status_code == 202
        assert c.post(f"/v1/sessions/{other}/turns", json=body, headers=key).status_code == 200
    digest = hashlib.sha256(f"{tenant}/{other}/{key['Idempotency-Key']}".encode()).digest()
    receiver.trace_id = digest[:16]
    wait_for(
        lambda: len(receiver.named("turnkeep.admit")) >= 2,
        60,
        interval=0.1,
        what="both admission spans",
    )
    spans = {attrs(s)["turnkeep.admission"]: s for _, s in receiver.named("turnkeep.admit")}
    assert set(spans) == {"created", "replayed"}
    assert spans["created"].span_id == digest[16:24]
    assert spans["replayed"].parent_span_id == spans["created"].span_id

    payload = b"".join(receiver.bodies)
    assert PROMPT.encode() not in payload and b"secret-prompt" not in payload
    receiver.check()
