"""Auth fails closed; tenants never see each other; health, readiness and metrics."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.api_server import Api, admit, serve_api


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env) as handle:
        yield handle


def test_no_tokens_configured_is_503(service_env: dict[str, str]) -> None:
    with serve_api(service_env, tokens="") as bare:
        c = bare.client()
        r = c.get("/v1/sessions/anything")
        assert r.status_code == 503
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "auth_not_configured"
        r = admit(c, "s1", "k1")
        assert r.status_code == 503 and r.json()["code"] == "auth_not_configured"
        assert c.get("/healthz").status_code == 200


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", "Basic abc", "Bearer", "x"])
def test_missing_or_wrong_token_is_401(api: Api, sid: str, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    with httpx.Client(base_url=api.url, headers=headers) as c:
        for r in (c.get(f"/v1/sessions/{sid}"), admit(c, sid, "k1"), c.get("/metrics")):
            assert r.status_code == 401
            assert r.headers["www-authenticate"] == "Bearer"
            assert r.json()["code"] == "unauthorized"


def test_every_path_but_health_and_docs_needs_a_token(api: Api) -> None:
    with httpx.Client(base_url=api.url) as c:
        # checked before routing: a path no route serves is refused like any other
        r = c.get("/no-such-path")
        assert r.status_code == 401 and r.json()["code"] == "unauthorized"
        assert c.get("/openapi.json").status_code == 200
    assert api.client().get("/no-such-path").status_code == 404


def test_health_and_readiness_need_no_token(api: Api) -> None:
    with httpx.Client(base_url=api.url) as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        r = c.get("/readyz")
        assert r.status_code == 200
        assert r.json() == {"status": "ready", "checks": {"postgres": "ok", "redis": "ok"}}


def test_metrics_count_admissions(api: Api, sid: str) -> None:
    c = api.client()
    admit(c, sid, "k1")
    admit(c, sid, "k1")
    r = c.get("/metrics")
    assert r.status_code == 200
    text = r.text
    assert 'turnkeep_admissions_total{outcome="created"}' in text
    assert 'turnkeep_admissions_total{outcome="replayed"}' in text
    assert 'route="/v1/sessions/{sid}/turns"' in text
    assert sid not in text


def _routes(sid: str, tid: str) -> list[tuple[str, str, dict[str, str]]]:
    sse = {"Accept": "text/event-stream"}
    as_json = {"Accept": "application/json"}
    return [
        ("GET", f"/v1/sessions/{sid}", {}),
        ("GET", f"/v1/sessions/{sid}/turns/{tid}", {}),
        ("GET", f"/v1/sessions/{sid}/turns/{tid}?wait=1", {}),
        ("GET", f"/v1/sessions/{sid}/events", sse),
        ("GET", f"/v1/sessions/{sid}/events?after=0", as_json),
        ("GET", f"/v1/sessions/{sid}/messages", {}),
        ("POST", f"/v1/sessions/{sid}/turns/{tid}/cancel", {}),
    ]


def _status(client: httpx.Client, method: str, path: str, headers: dict[str, str]) -> int:
    """The status only: an SSE answer streams forever, so it is not read to the end."""
    with client.stream(method, path, headers=headers) as r:
        return r.status_code


def test_another_tenants_resources_are_404_like_missing_ones(api: Api, sid: str) -> None:
    owner, other = api.client("a"), api.client("b")
    assert admit(owner, sid, "t1").status_code == 202
    for (method, path, headers), (_, missing, _) in zip(
        _routes(sid, "t1"), _routes("no-such-session", "no-such-turn"), strict=True
    ):
        assert _status(owner, method, path, headers) in (200, 202), path
        foreign = other.request(method, path, headers=headers)
        absent = other.request(method, missing, headers=headers)
        assert foreign.status_code == 404, (path, foreign.text)
        assert foreign.content == absent.content, path
        assert foreign.headers["content-type"] == "application/problem+json"
        assert foreign.json()["code"] == "not_found"
        assert sid not in foreign.text and "t1" not in foreign.text
    # a missing turn in one's own session answers the same as a foreign turn
    own_missing = owner.get(f"/v1/sessions/{sid}/turns/nope")
    assert own_missing.content == other.get(f"/v1/sessions/{sid}/turns/t1").content
    # and tenant b's writes to the same session id stay its own
    assert admit(other, sid, "t1", agent="other").status_code == 202
    assert owner.get(f"/v1/sessions/{sid}").json()["agent"] == "demo"
    assert other.get(f"/v1/sessions/{sid}").json()["agent"] == "other"
