"""The A2A routes ``api/app.py`` mounts: the public agent cards and the JSON-RPC
endpoints (``/a2a/{agent}`` and ``/a2a``), with the caller's principal (set by
``Authenticate``) in each call's context.
"""

from __future__ import annotations

import re

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import ServerCallContextBuilder, create_jsonrpc_routes
from a2a.utils.constants import VERSION_HEADER
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from turnkeep.api import problems
from turnkeep.api.a2a.cards import Described, agent_card, described, root_card
from turnkeep.api.a2a.handler import TurnkeepRequestHandler
from turnkeep.api.auth import Principal, principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service.defaults import public_defaults
from turnkeep.store.errors import NotFound

#: the agent cards below /a2a (per agent, and the root card again): public
#: (api/app.py passes them to ``Authenticate``, with ``ROOT_CARD``)
PUBLIC_PATTERNS = (re.compile(r"^/a2a(/[^/]+)?/\.well-known/agent-card\.json$"),)
ROOT_CARD = "/.well-known/agent-card.json"


class _Subject(User):
    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.principal.subject


class _Context(ServerCallContextBuilder):
    """The call's principal (set by ``Authenticate``), services and endpoint agent.
    Of the headers only the protocol version is kept (never the Authorization)."""

    def build(self, request: Request) -> ServerCallContext:
        principal = principal_of(request)
        version = request.headers.get(VERSION_HEADER)
        return ServerCallContext(
            user=_Subject(principal),
            state={
                "principal": principal,
                "services": services_of(request),
                "agent": request.path_params.get("agent"),
                # where the extended card says its endpoints are
                "base": _base(request),
                "headers": {VERSION_HEADER: version} if version else {},
            },
        )


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _unknown_agent() -> Response:
    return problems.answer(NotFound("no agent of that name is declared")).response()


def _public(request: Request) -> list[Described]:
    """Every agent as a public card describes it: no tenant, so the version of a
    tenant that promoted none (api/a2a/cards.py says why)."""
    services = services_of(request)
    return described(services.registry, public_defaults(services), tenant=False)


async def _agent_card(request: Request) -> Response:
    name = request.path_params["agent"]
    found = [d for d in _public(request) if d.agent.name == name]
    if not found:
        return _unknown_agent()
    return JSONResponse(agent_card_to_dict(agent_card(_base(request), found[0])))


async def _root_card(request: Request) -> Response:
    return JSONResponse(agent_card_to_dict(root_card(_base(request), _public(request))))


_handler = TurnkeepRequestHandler()
[_agent_route] = create_jsonrpc_routes(_handler, "/a2a/{agent}", context_builder=_Context())
[_root_route] = create_jsonrpc_routes(_handler, "/a2a", context_builder=_Context())


async def _agent_rpc(request: Request) -> Response:
    if request.path_params["agent"] not in services_of(request).registry.names():
        return _unknown_agent()
    response: Response = await _agent_route.endpoint(request)
    return response


router = APIRouter(
    routes=[
        Route(ROOT_CARD, _root_card, methods=["GET"]),
        Route("/a2a" + ROOT_CARD, _root_card, methods=["GET"]),
        Route("/a2a/{agent}/.well-known/agent-card.json", _agent_card, methods=["GET"]),
        Route("/a2a/{agent}", _agent_rpc, methods=["POST"]),
        _root_route,
    ]
)
