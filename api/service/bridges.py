"""Chat bridges on the one submit path (docs/bridges.md): a verified inbound message
becomes a turn of its thread's session, admitted through ``admission.admit`` as the
sender's bound participant, with the reply's outbox row written in the same
transaction; a button press answers the turn's open request through
``answers.answer``. Transport-free: api/http/bridges.py verifies and parses, this
decides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx

from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import admission, answers
from turnkeep.api.service.requests import InputMessage, TurnRequest
from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import SLACK, InboundMessage, slack, slack_api, tenant_of
from turnkeep.runtime.bridges.slack import ButtonPress
from turnkeep.store.bridges import BindingRecord, Sender
from turnkeep.store.errors import NotFound
from turnkeep.store.keys import refused_key
from turnkeep.store.records import Admission, WebhookSpec

log = logging.getLogger(__name__)

#: what an unbound sender is told, once per message
REFUSAL = (
    "Sorry, I can't take requests from you here: you are not bound to a turnkeep "
    "participant in this channel. A turnkeep admin of your team can bind you."
)
#: seconds a refusal's mark is kept (providers retry within minutes)
REFUSED_FOR = 3600


@dataclass(frozen=True)
class Received:
    """What one inbound message came to: admitted (a new turn or a replay), refused
    (an unbound sender: ``refuse`` says whether to tell them; a workspace no tenant
    was assigned), or ignored, and why."""

    admission: Admission | None = None
    refused: bool = False
    refuse: bool = False
    ignored: str = ""
    #: the message's workspace is assigned to no tenant: nobody there can be bound
    unassigned: bool = False


def principal(binding: BindingRecord) -> Principal:
    """Who a bound sender's messages are admitted as."""
    return Principal(tenant=binding.tenant_id, subject=binding.subject, role=binding.role)


def sender(message: InboundMessage) -> Sender:
    thread = message.thread
    return Sender(message.bridge, thread.workspace, thread.channel, message.user)


def _reply(services: ApiResources, message: InboundMessage, binding: BindingRecord) -> WebhookSpec:
    """The outbox row of the reply: Slack's Web API, or the generic bridge's signed
    webhook to the binding's reply URL (with the thread in its body)."""
    target = message.thread.target()
    if message.bridge == SLACK:
        return WebhookSpec(
            run_id="",
            node_id="",
            url=services.settings.slack.api_url,
            secret_id="",
            delivery_id=webhooks.new_delivery_id(),
            connector=SLACK,
            target=target,
        )
    if binding.reply_url is None:
        raise ValueError("a generic binding has a reply URL")  # the API refuses one without
    spec = admission.callback(services, binding.reply_url)
    return WebhookSpec(
        run_id="",
        node_id="",
        url=spec.url,
        secret_id=spec.secret_id,
        delivery_id=spec.delivery_id,
        target=target,
    )


def receive(services: ApiResources, message: InboundMessage) -> Received:
    """Admit ``message`` as a turn of its thread's session (blocking), or say why not.
    A message that does not address the bot continues only a thread whose session
    exists (the bot was addressed in it before); any other is ignored, an unbound
    sender's too (people talk in threads the bot can see: only one who addresses the
    bot is told it will not answer). The sender is looked up only in the tenant its
    workspace is assigned to: another tenant's binding of them is never found."""
    tenant = tenant_of(services.settings, message.bridge, message.thread.workspace)
    if tenant is None:
        return Received(refused=True, unassigned=True)
    binding = services.store.bridges.find_binding(tenant, sender(message))
    if binding is None:
        if not message.addressed:
            return Received(ignored="not addressed, and the sender is not bound")
        return Received(refused=True, refuse=_first_refusal(services, message))
    who = principal(binding)
    if not message.addressed:
        try:
            services.store.reads.get_session(who.tenant, message.session_id)
        except NotFound:
            return Received(ignored="a thread the bot is not in")
    body = TurnRequest(agent=binding.agent, input=[InputMessage(role="user", content=message.text)])
    admitted = admission.admit(
        services,
        who,
        message.session_id,
        message.turn_id,
        body,
        webhook=_reply(services, message, binding),
        surface=f"bridge.{message.bridge}",
    )
    return Received(admission=admitted)


def _first_refusal(services: ApiResources, message: InboundMessage) -> bool:
    """Whether this is the first time this message's sender is refused (a retry of the
    same message is not told twice); True when Redis cannot say (once too often
    rather than never)."""
    try:
        return bool(services.redis.set(refused_key(message.turn_id), "1", nx=True, ex=REFUSED_FOR))
    except Exception as exc:
        log.warning("refusal mark not set: %s", type(exc).__name__)
        return True


def _ephemeral(services: ApiResources, *, channel: str, user: str, thread: str, text: str) -> None:
    """Tell one Slack user, in a thread, only they see it (best effort: it admits or
    answers nothing, so nothing durable waits on it)."""
    token = services.settings.slack.bot_token.get_secret_value()
    if not token:
        return
    # short: this holds one of the few after-answer threads (api/resources.py)
    with httpx.Client(timeout=3) as http:
        answer = slack_api.post_ephemeral(
            http,
            services.settings.slack.api_url,
            token,
            channel=channel,
            user=user,
            thread=thread,
            text=text,
        )
    if not answer.ok:
        log.info("an ephemeral message was not posted: %s", answer.error)


def tell_refused(services: ApiResources, message: InboundMessage) -> None:
    """Tell an unbound Slack sender why nothing happens."""
    if message.bridge == SLACK:
        thread = message.thread
        _ephemeral(
            services,
            channel=thread.channel,
            user=message.user,
            thread=thread.thread,
            text=REFUSAL,
        )


def tell_press_refused(services: ApiResources, pressed: ButtonPress, code: str) -> None:
    """Tell someone whose button press was refused why (``input_forbidden``: not the
    one the request is bound to; else it is answered or gone)."""
    text = (
        "Only the person this request is bound to may answer it."
        if code in ("input_forbidden", "not_found")
        else f"This request can no longer be answered ({code})."
    )
    _ephemeral(
        services,
        channel=pressed.channel,
        user=pressed.user,
        thread=pressed.thread_ts or pressed.message_ts or "",
        text=text,
    )


def after_press(services: ApiResources, pressed: ButtonPress, done: answers.Answered) -> None:
    """What follows an answered press: the turn's session enqueued, and the prompt
    showing the answer in place of its buttons (best effort)."""
    answers.after_answer(services, done)
    token = services.settings.slack.bot_token.get_secret_value()
    if not token or pressed.message_ts is None:
        return
    body = slack.answered_body(
        pressed.channel, pressed.message_ts, approved=pressed.approved, user=pressed.user
    )
    with httpx.Client(timeout=3) as http:
        answer = slack_api.update_message(http, services.settings.slack.api_url, token, body)
    if not answer.ok:
        log.info("the answered prompt was not updated: %s", answer.error)


def press(services: ApiResources, pressed: ButtonPress) -> answers.Answered:
    """Answer the approval a button names, as the presser's bound participant: only
    one the request is bound to may (``answers.answer`` checks it, and refuses anyone
    else with ``InputForbidden``); an unbound presser (or one of a workspace no tenant
    was assigned) is ``NotFound``."""
    tenant = tenant_of(services.settings, SLACK, pressed.team)
    who = Sender(SLACK, pressed.team, pressed.channel, pressed.user)
    binding = None if tenant is None else services.store.bridges.find_binding(tenant, who)
    if binding is None:
        raise NotFound("no binding for this sender")
    return answers.answer(
        services,
        principal(binding),
        pressed.session_id,
        pressed.turn_id,
        pressed.request_id,
        {"approved": pressed.approved, "reason": f"pressed in Slack by {pressed.user}"},
    )


def after_receive(services: ApiResources, message: InboundMessage, received: Received) -> None:
    """What follows the answer to the provider: enqueue the admitted turn's session, or
    tell a refused sender."""
    if received.admission is not None:
        admission.after_admission(services, received.admission)
    elif received.refuse:
        tell_refused(services, message)
