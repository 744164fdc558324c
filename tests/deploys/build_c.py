"""A later build that dropped every version 1, the pinned ``keeper``'s too
(tests/deploys/__init__.py)."""

from tests.deploys import keeper, ledger, support

AGENTS = [support("2"), keeper("2"), ledger("2")]
