"""The build after the deploy (tests/deploys/__init__.py): new prompts; the pinned
``keeper``'s version 1 served beside its 2, the others' version 1 dropped."""

from tests.deploys import keeper, ledger, support

AGENTS = [support("2"), keeper("1"), keeper("2"), ledger("2")]
