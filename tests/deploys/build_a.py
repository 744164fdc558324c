"""The build before the deploy (tests/deploys/__init__.py)."""

from tests.deploys import keeper, ledger, support

AGENTS = [support("1"), keeper("1"), ledger("1")]
