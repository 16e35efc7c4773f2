"""Retries of a model request the server answered 429 (rate limited) or 5xx (failed).

Waits grow exponentially from `wait_s`, each capped at `max_wait_s`, with jitter (half of
each wait is random), so many clients that failed together do not retry together. A
server's Retry-After is honoured when it asks for no more than `max_wait_s`. A request
whose answer had started streaming is never retried: its text already reached the reader.
After the last retry the error is reported as it came, saying how many retries were made.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from freshline.agent.errors import BackendRateLimited, BackendServerError
from freshline.agent.messages import AssistantReply, TextCallback
from freshline.config.loading import RETRIES_MAX, WAIT_MAX_S

RETRYABLE = (BackendRateLimited, BackendServerError)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before retrying (`[model]` retries, retry_wait_s,
    retry_max_wait_s)."""

    retries: int = 3
    wait_s: float = 1.0
    max_wait_s: float = 30.0

    def __post_init__(self) -> None:
        # The config checks these on load; a policy built otherwise must not hang or overflow.
        if not 0 <= self.retries <= RETRIES_MAX:
            raise ValueError(f"retries must be between 0 and {RETRIES_MAX}, got {self.retries}")
        for name in ("wait_s", "max_wait_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= WAIT_MAX_S):
                raise ValueError(f"{name} must be between 0 and {WAIT_MAX_S:g}, got {value!r}")

    def delays(self, rng: random.Random) -> list[float]:
        """The wait before each retry: `wait_s * 2**n` capped at `max_wait_s`, the upper half
        of it random."""
        out = []
        for n in range(self.retries):
            cap = min(self.max_wait_s, self.wait_s * 2.0 ** min(n, 64))
            out.append(cap / 2 + rng.uniform(0, cap / 2))
        return out


NO_RETRY = RetryPolicy(retries=0)


def with_retries(
    attempt: Callable[[TextCallback | None], AssistantReply],
    on_text: TextCallback | None,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> AssistantReply:
    """Run `attempt` (given the text callback), retrying 429 and 5xx answers per `policy`."""
    delays = policy.delays(rng or random.Random())
    for n in range(len(delays) + 1):
        streamed = False

        def relay(chunk: str) -> None:
            nonlocal streamed
            streamed = True
            assert on_text is not None
            on_text(chunk)

        try:
            return attempt(relay if on_text is not None else None)
        except RETRYABLE as exc:
            if streamed or n == len(delays):
                if n:
                    raise type(exc)(f"{exc} (after {n} {'retry' if n == 1 else 'retries'})",
                                    exc.retry_after) from exc
                raise
            asked = exc.retry_after
            sleep(asked if asked is not None and asked <= policy.max_wait_s else delays[n])
    raise AssertionError("unreachable")  # the loop returns or raises
