"""A ``callback_url`` whose host is not public is refused at admission (issue 27): 422
``callback_not_allowed``, nothing admitted, on a turn's admission and a workflow
node's alike, unless the operator allows such callbacks
(``TURNKEEP_WEBHOOK_ALLOW_PRIVATE``, api/service/callbacks.py). Each delivery attempt
checks again (tests/integration/test_workflows.py): a name can resolve elsewhere later."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.integration.api_server import Api, admit, serve_api
from turnkeep.store.facade import Store

SECRET = "whsec-" + uuid.uuid4().hex
#: loopback, private, link-local and reserved hosts, literal and by name
PRIVATE = [
    "http://127.0.0.1:9/hook",
    "http://localhost:8080/hook",
    "http://[::1]/hook",
    "http://10.1.2.3/hook",
    "http://169.254.169.254/latest/meta-data/",
    "https://192.168.0.10/hook",
    "http://172.16.5.4/hook",
    "http://100.64.0.1/hook",
    "http://[fe80::1]/hook",
    "http://[fd00::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0/hook",
    "http://2130706433/hook",  # 127.0.0.1 as one number
]
#: a public address (a literal: this machine's resolver answers documentation ranges)
PUBLIC = "https://93.184.216.34/hook"


@pytest.fixture(scope="module")
def strict(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, webhook_secret=SECRET) as handle:
        yield handle


@pytest.fixture(scope="module")
def allowing(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, webhook_secret=SECRET, webhook_allow_private=True) as handle:
        yield handle


@pytest.mark.parametrize("url", PRIVATE)
def test_a_callback_to_a_host_that_is_not_public_is_refused(strict: Api, url: str) -> None:
    c, sid = strict.client(), f"cb-{uuid.uuid4().hex[:8]}"
    r = admit(c, sid, "t1", callback_url=url)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "callback_not_allowed"
    assert body["errors"][0]["loc"] == ["body", "callback_url"]
    assert "TURNKEEP_WEBHOOK_ALLOW_PRIVATE" in body["detail"]
    # nothing admitted: no session, no turn
    assert c.get(f"/v1/sessions/{sid}").status_code == 404
    node = c.post(
        f"/v1/workflows/run-{sid}/nodes/n1/turns",
        json={"agent": "demo", "input": [{"role": "user", "content": "go"}], "callback_url": url},
    )
    assert node.status_code == 422 and node.json()["code"] == "callback_not_allowed", node.text
    assert c.get(f"/v1/workflows/run-{sid}/nodes/n1").status_code == 404


def test_a_public_callback_is_admitted_and_an_allowed_private_one_too(
    strict: Api, allowing: Api, store: Store
) -> None:
    sid = f"cb-{uuid.uuid4().hex[:8]}"
    r = admit(strict.client(), sid, "t1", callback_url=PUBLIC)
    assert r.status_code == 202, r.text
    hook = store.outbox.get_webhook(strict.tenant_a, sid, "t1")
    assert hook is not None and hook.url == PUBLIC
    # a name that does not resolve is not known to be private: admitted (each delivery
    # attempt resolves it again)
    r = admit(strict.client(), sid, "t2", callback_url="https://hooks.example.invalid/x")
    assert r.status_code == 202, r.text
    # the operator allows private callbacks: the same URLs are admitted
    for i, url in enumerate(PRIVATE[:5]):
        other = f"{sid}-{i}"
        r = admit(allowing.client(), other, "t1", callback_url=url)
        assert r.status_code == 202, (url, r.text)
        hook = store.outbox.get_webhook(allowing.tenant_a, other, "t1")
        assert hook is not None and hook.url == url
