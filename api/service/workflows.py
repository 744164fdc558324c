"""Workflow nodes' service (api/http/workflows.py is their routes): one turn per
(run, node), with ids a retried node finds again (``node_ids``), admitted through the
service's admission with the node's webhook in its transaction, and read back with
that webhook's delivery state from the outbox (store/outbox.py)."""

from __future__ import annotations

import hashlib

from turnkeep.api.auth import Principal
from turnkeep.api.errors import WebhookNotConfigured
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import admission as admitting
from turnkeep.api.service import callbacks, reads
from turnkeep.api.service.access import may_write
from turnkeep.api.service.requests import TurnRequest
from turnkeep.runtime import webhooks
from turnkeep.runtime.hashing import canonical_json
from turnkeep.store.errors import IdempotencyConflict
from turnkeep.store.records import Admission, TurnRecord, WebhookRecord, WebhookSpec


def node_ids(tenant: str, run_id: str, node_id: str) -> tuple[str, str]:
    """The node's (session id, turn id): stable for (tenant, run, node), within the id
    rules whatever the run and node ids look like."""
    key = canonical_json(["turnkeep.workflow-node.v1", tenant, run_id, node_id])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
    return f"wf-{digest}", f"node-{digest}"


# -- blocking: the routes run them on ApiResources.run ---------------------------------------


def admit_node(
    services: ApiResources, principal: Principal, run_id: str, node_id: str, body: TurnRequest
) -> tuple[Admission, WebhookRecord | None]:
    """Admit the node's turn (and its webhook, in one transaction), idempotent by the
    node: a replay answers the stored turn unless its input or callback differ."""
    may_write(principal)  # before the webhook's own checks
    sid, tid = node_ids(principal.tenant, run_id, node_id)
    spec = None
    if body.callback_url is not None:
        secret = services.settings.webhooks.secret.get_secret_value()
        if not secret:
            raise WebhookNotConfigured("no webhook signing secret is configured")
        callbacks.check(services, body.callback_url)  # a host that is not public: 422
        spec = WebhookSpec(
            run_id=run_id,
            node_id=node_id,
            url=body.callback_url,
            secret_id=webhooks.secret_id(secret),
            delivery_id=webhooks.new_delivery_id(),
        )
    admission = admitting.admit(
        services, principal, sid, tid, body, webhook=spec, surface="workflow"
    )
    stored = None
    if admission.created:
        if spec is not None:
            stored = node_webhook(services, principal.tenant, sid, tid)
    else:
        stored = node_webhook(services, principal.tenant, sid, tid)
        if (None if stored is None else stored.url) != body.callback_url:
            raise IdempotencyConflict("the node was started with another callback_url")
    return admission, stored


def read_node(
    services: ApiResources, principal: Principal, run_id: str, node_id: str
) -> tuple[TurnRecord, WebhookRecord | None]:
    """The node's turn (``NotFound`` when this tenant never started it) and webhook."""
    sid, tid = node_ids(principal.tenant, run_id, node_id)
    turn = reads.read(services, principal, sid, tid)
    return turn, node_webhook(services, principal.tenant, sid, tid)


def node_webhook(
    services: ApiResources, tenant: str, session_id: str, turn_id: str
) -> WebhookRecord | None:
    """The node's webhook as the outbox holds it (None: started without a callback)."""
    return services.store.outbox.get_webhook(tenant, session_id, turn_id)
