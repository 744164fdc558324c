"""A ``callback_url`` refused at admission when its host is not public (loopback,
private, link-local, carrier-grade NAT, reserved, multicast; IPv4 and IPv6, and a
name that resolves to any such address), unless the operator allows it
(``TURNKEEP_WEBHOOK_ALLOW_PRIVATE``): the turn is not admitted, 422
``callback_not_allowed``. A name that does not resolve now is admitted: it is not
known to be private, and a resolver's outage should not refuse turns. Each delivery
attempt checks again (worker/webhooks.py), for a name may resolve elsewhere later
(DNS rebinding); restrict the workers' egress too where that matters.

The API process resolves the host here (blocking: admission runs on a worker thread).
"""

from __future__ import annotations

from turnkeep.api.errors import CallbackRefused
from turnkeep.api.resources import ApiResources
from turnkeep.runtime import webhooks


def check(services: ApiResources, url: str) -> None:
    """``CallbackRefused`` for a callback to a host that is not public (unless allowed)."""
    if services.settings.webhooks.allow_private:
        return
    if webhooks.private_target(url) == "private_address":
        raise CallbackRefused()
