"""The chat bridges' inbound routes (docs/bridges.md): what a provider calls. Thin:
verify the provider's signature over the raw body, parse, and hand the message to the
service (api/service/bridges.py); the session's enqueue (or a refusal's message) goes
after the answer, so a provider hears back in milliseconds (Slack wants 3 s).

These paths take no bearer token (``PUBLIC_PATHS``: the provider has none); the
signature is their credential, checked before anything is looked up. They are not in
the OpenAPI document, like MCP and A2A: they speak the provider's protocol, not ours.

A refusal a retry cannot mend (an unbound sender, a conflict, an unknown agent) is
answered 200, so the provider does not retry it; ``Unavailable`` (Postgres or Redis
away) is 503, so it does.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from turnkeep.api.errors import BridgeNotConfigured, BridgeSignatureInvalid, ServiceError
from turnkeep.api.resources import ApiResources, services_of
from turnkeep.api.service import bridges
from turnkeep.runtime.bridges import InboundMessage, generic, slack
from turnkeep.runtime.errors import UnknownAgent
from turnkeep.store.errors import StoreError, Unavailable

log = logging.getLogger(__name__)

router = APIRouter()

SLACK_EVENTS = "/bridges/slack/events"
SLACK_INTERACTIONS = "/bridges/slack/interactions"
GENERIC_MESSAGES = "/bridges/generic/messages"
#: what a provider calls, without a bearer token (api/app.py makes them public)
PUBLIC_PATHS = (SLACK_EVENTS, SLACK_INTERACTIONS, GENERIC_MESSAGES)


async def _slack_body(request: Request, services: ApiResources) -> bytes:
    """The raw body once its Slack signature verified (the signature is over it)."""
    secret = services.settings.slack.signing_secret.get_secret_value()
    if not secret:
        raise BridgeNotConfigured()
    raw = await request.body()
    headers = request.headers
    if not slack.verify(
        secret, headers.get(slack.TIMESTAMP_HEADER), raw, headers.get(slack.SIGNATURE_HEADER)
    ):
        raise BridgeSignatureInvalid()
    return raw


@router.post(SLACK_EVENTS, include_in_schema=False)
async def slack_events(request: Request) -> JSONResponse:
    """Slack's Events API: the URL check, mentions and thread messages. A retry
    (``X-Slack-Retry-Num``) of a message admitted before is a replay of its turn."""
    services = services_of(request)
    raw = await _slack_body(request, services)
    parsed = slack.parse_event(raw)
    if isinstance(parsed, slack.Challenge):
        return JSONResponse({"challenge": parsed.challenge})
    if isinstance(parsed, slack.Ignored):
        return JSONResponse({"ok": True, "ignored": parsed.why})
    return await _receive(services, parsed)


@router.post(SLACK_INTERACTIONS, include_in_schema=False)
async def slack_interactions(request: Request) -> JSONResponse:
    """Slack's interactivity: an approval button pressed. Only a participant the turn's
    request is bound to may answer it; anyone else is refused and nothing changes."""
    services = services_of(request)
    raw = await _slack_body(request, services)
    pressed = slack.parse_action(raw)
    if isinstance(pressed, slack.Ignored):
        return JSONResponse({"ok": True, "ignored": pressed.why})
    try:
        done = await services.run(bridges.press, services, pressed)
    except Unavailable:
        raise
    except (StoreError, ServiceError) as exc:
        log.info("a Slack button press was refused: %s", exc.code)
        return JSONResponse(
            {"ok": False, "refused": exc.code},
            background=services.after_answer(
                bridges.tell_press_refused, services, pressed, exc.code
            ),
        )
    return JSONResponse(
        {"ok": True, "state": done.turn.state.value},
        background=services.after_answer(bridges.after_press, services, pressed, done),
    )


@router.post(GENERIC_MESSAGES, include_in_schema=False)
async def generic_messages(request: Request) -> JSONResponse:
    """The generic bridge (runtime/bridges/generic.py): a signed JSON message in."""
    services = services_of(request)
    secret = services.settings.bridge.secret.get_secret_value()
    if not secret or not services.settings.bridge.tenant:
        # a secret with no tenant would sign as any tenant's bound sender
        raise BridgeNotConfigured()
    raw = await request.body()
    if not generic.verify(secret, raw, request.headers.get(generic.SIGNATURE_HEADER)):
        raise BridgeSignatureInvalid()
    message = generic.parse(raw)
    if message is None:
        return JSONResponse({"ok": False, "ignored": "malformed"}, status_code=422)
    return await _receive(services, message)


async def _receive(services: ApiResources, message: InboundMessage) -> JSONResponse:
    try:
        received = await services.run(bridges.receive, services, message)
    except Unavailable:
        raise
    except (StoreError, ServiceError, UnknownAgent) as exc:
        # the code only: the message may name the tenant's ids
        log.info("a %s message was refused: %s", message.bridge, exc.code)
        return JSONResponse({"ok": False, "refused": exc.code})
    body: dict[str, object] = {"ok": True}
    admitted = received.admission
    if admitted is not None:
        body.update(turn_id=admitted.turn.turn_id, created=admitted.created)
    elif received.unassigned:
        body.update(ok=False, refused="workspace_unassigned")
    elif received.refused:
        body.update(ok=False, refused="unbound")
    else:
        body["ignored"] = received.ignored
    return JSONResponse(
        body, background=services.after_answer(bridges.after_receive, services, message, received)
    )
