"""The max_running limits a worker starts turns under (docs/flow-control.md).

A tenant's limit is the one it declared (``tenant_limits``, ``PUT /v1/limits``), else
``TURNKEEP_MAX_RUNNING_PER_TENANT``; an agent's is its definition's ``max_running``
(the registry's, by hash). The declared ones are read from Postgres once every
``REFRESH`` seconds per process, by whichever thread finds them stale, so a start
with no limit declared costs no statement: a limit declared or changed takes effect
within that long. A worker that cannot read them keeps what it last read.
"""

from __future__ import annotations

import logging
import threading
import time

from turnkeep.store.errors import Unavailable
from turnkeep.store.facade import Store

log = logging.getLogger(__name__)

#: seconds a reading of the declared limits serves starts
REFRESH = 5.0


class TenantLimitsCache:
    def __init__(self, store: Store, default: int | None, *, refresh: float = REFRESH) -> None:
        self.store = store
        self.default = default
        self.refresh = refresh
        self._lock = threading.Lock()
        self._declared: dict[str, int] = {}
        self._read_at = -refresh

    def max_running(self, tenant_id: str) -> int | None:
        """The tenant's limit: its declared one, else the setting's, else None."""
        if time.monotonic() - self._read_at >= self.refresh:
            self._read()
        return self._declared.get(tenant_id, self.default)

    def _read(self) -> None:
        with self._lock:
            if time.monotonic() - self._read_at < self.refresh:
                return  # another thread read them meanwhile
            try:
                self._declared = self.store.max_running.declared_limits()
            except Unavailable as exc:
                log.warning("declared limits not read (%s); keeping the last", type(exc).__name__)
            self._read_at = time.monotonic()
