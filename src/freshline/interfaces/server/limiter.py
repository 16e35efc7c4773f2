"""The limit on failed sign-ins: at most `limit` within `window_s` seconds per client.

The limiter only ever sees credentials that failed: a request whose credential is valid
is served whatever its address did before (behind a proxy every user may share one
address, and one client's failures must not lock the others out). A credential that
could be a guess (an unknown token, a signature that does not verify) is a failure;
past the limit its address is answered 429 with the seconds until a failure fits again,
and the failures it keeps sending are not recorded, so it cannot push that moment away.

The failures live in the store (`store/failures.py`), so every `serve` process on it
counts the same ones, and a failure is read and recorded in one transaction there, so
concurrent guesses never pass the limit; `retry_after` is the pure rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

FAILURE_LIMIT = 10  # failed sign-ins per client address ...
FAILURE_WINDOW_S = 60.0  # ... within this many seconds, before it is turned away


def retry_after(failures: Sequence[float], now: float, limit: int, window_s: float) -> float:
    """Seconds from `now` until fewer than `limit` of `failures` (times, none after `now`)
    lie within the window ending then: 0 when that holds already."""
    live = sorted(f for f in failures if f > now - window_s)
    if len(live) < limit:
        return 0.0
    return live[len(live) - limit] + window_s - now


class FailureLog(Protocol):
    """Where failures are kept (the store)."""

    def failures_of(self, address: str, since: float) -> list[float]: ...

    def failure_try(self, address: str, at: float, since: float,
                    limit: int) -> list[float]: ...


@dataclass
class FailureLimiter:
    """Failed sign-ins per key (`addresses.limit_key`), kept in `log`."""

    log: FailureLog
    limit: int = FAILURE_LIMIT
    window_s: float = FAILURE_WINDOW_S
    clock: Callable[[], float] = time.time  # wall-clock: shared by every process

    def guessed(self, key: str) -> float:
        """Count a guess of `key` when it fits the limit (0), else the seconds until one
        would (not counted)."""
        now = self.clock()
        since = now - self.window_s
        wait = retry_after(self.log.failures_of(key, since), now, self.limit, self.window_s)
        if wait > 0:  # turned away already: no write lock for an address past its limit
            return wait
        found = self.log.failure_try(key, now, since, self.limit)
        return retry_after(found, now, self.limit, self.window_s)
