"""The bearer-token table: what ``TURNKEEP_TOKENS`` holds and the principal each token
stands for. Pure (no HTTP, no store): the API authenticates with it (api/auth.py) and
the ``turnkeep tokens`` commands make and check entries with the same rules.

``TURNKEEP_TOKENS`` is a JSON list of ``{"sha256": hex, "tenant": str, "subject": str,
"role": "admin" | "member" | "reader"}`` (role optional, ``member`` by default):
only the SHA-256 of each token is configured, never the token. The tenant is an id
(``[A-Za-z0-9._-]{1,128}``), the subject ``[A-Za-z0-9._@+-]{1,128}`` (no ``:``, no
whitespace or control characters: one subject cannot be dressed as another in a
journal's ``by`` or a Redis key). Several tokens may stand for the same principal, so a
token is rotated by adding the new one, moving clients over, then removing the old; a
digest listed twice for different principals is refused. A presented token's digest is
compared with every configured one by ``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from enum import StrEnum

#: tenant ids end up in Redis keys (store/keys.py): no ``:`` allowed
ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
#: subjects are recorded (turns.submitted_by, every event's ``by``) and compared: an id's
#: characters and those of an e-mail address, nothing that could pass for a separator
SUBJECT_PATTERN = re.compile(r"^[A-Za-z0-9._@+-]{1,128}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")


class TenantRole(StrEnum):
    """A principal's role inside its tenant; each includes the rights of those below.
    (Not a message's role: that is ``turnkeep.runtime.messages.Role``.)"""

    ADMIN = "admin"
    MEMBER = "member"
    READER = "reader"


@dataclass(frozen=True)
class Principal:
    """Who called: the tenant every query is scoped by, the subject for the record,
    and the role inside the tenant (``admin``, ``member``, ``reader``)."""

    tenant: str
    subject: str
    role: str = TenantRole.MEMBER.value


class TokenTable:
    """The configured token digests, each with its principal."""

    def __init__(self, entries: list[tuple[str, Principal]]) -> None:
        self._entries = entries

    @classmethod
    def parse(cls, raw: str) -> TokenTable:
        """Parse ``TURNKEEP_TOKENS``. ValueError for a malformed table (never echoes it)."""
        if not raw.strip():
            return cls([])
        try:
            items = json.loads(raw)
        except json.JSONDecodeError:
            raise ValueError("TURNKEEP_TOKENS is not valid JSON") from None
        if not isinstance(items, list):
            raise ValueError("TURNKEEP_TOKENS must be a JSON list")
        entries: list[tuple[str, Principal]] = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"TURNKEEP_TOKENS[{i}] must be an object")
            digest = str(item.get("sha256", "")).lower()
            tenant = item.get("tenant")
            subject = item.get("subject")
            if not _HEX.fullmatch(digest):
                raise ValueError(f"TURNKEEP_TOKENS[{i}].sha256 must be 64 hex digits")
            if not isinstance(tenant, str) or not ID_PATTERN.fullmatch(tenant):
                raise ValueError(f"TURNKEEP_TOKENS[{i}].tenant must match {ID_PATTERN.pattern}")
            if not isinstance(subject, str) or not SUBJECT_PATTERN.fullmatch(subject):
                raise ValueError(
                    f"TURNKEEP_TOKENS[{i}].subject must match {SUBJECT_PATTERN.pattern}"
                )
            role = item.get("role", TenantRole.MEMBER.value)
            if role not in {r.value for r in TenantRole}:
                raise ValueError(f"TURNKEEP_TOKENS[{i}].role must be admin, member or reader")
            principal = Principal(tenant=tenant, subject=subject, role=role)
            if any(d == digest and p != principal for d, p in entries):
                raise ValueError(
                    f"TURNKEEP_TOKENS[{i}].sha256 is listed before for another principal"
                )
            entries.append((digest, principal))
        return cls(entries)

    @property
    def configured(self) -> bool:
        return bool(self._entries)

    def role_of(self, tenant: str, subject: str) -> str | None:
        """The highest role any configured token gives ``subject`` in ``tenant``; None
        when no token stands for it (removed, or never there)."""
        ranks = [TenantRole.READER, TenantRole.MEMBER, TenantRole.ADMIN]
        found = [
            ranks.index(TenantRole(p.role))
            for _, p in self._entries
            if p.tenant == tenant and p.subject == subject
        ]
        return ranks[max(found)].value if found else None

    def lookup(self, token: str) -> Principal | None:
        """The principal of a presented token, or None. Compares against every entry."""
        presented = hashlib.sha256(token.encode("utf-8")).hexdigest()
        found: Principal | None = None
        for digest, principal in self._entries:
            if hmac.compare_digest(presented, digest):
                found = principal
        return found


def token_digest(token: str) -> str:
    """The ``sha256`` value to configure for a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
