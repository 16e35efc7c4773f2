"""The server's log under attack: at most one record a second of each kind.

A request that fails is logged with its traceback; a client that makes every request
fail would grow the log as fast as it can send them (seen, issue 47: 814 KB/s from one
address). `Throttle` lets through the first record of each kind (its logger and its
message before formatting) in every `every_s`, and the one after a quiet spell says how
many it held back. Attached to the handlers of the root and uvicorn loggers
(`throttle_logs`), it holds for freshline's records, the MCP SDK's and uvicorn's alike.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access")  # "": the root
KINDS_MAX = 1024  # kinds remembered at most (then forgotten all at once)


class Throttle(logging.Filter):
    """A filter letting one record of each kind through per `every_s` seconds."""

    def __init__(self, every_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.every_s = every_s
        self.clock = clock
        self._kinds: dict[tuple[str, str], tuple[float, int]] = {}  # last let through, held

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is logged (one held back is counted)."""
        kind = (record.name, str(record.msg))
        now = self.clock()
        last, held = self._kinds.get(kind, (-math.inf, 0))
        if now - last < self.every_s:
            self._kinds[kind] = (last, held + 1)
            return False
        if len(self._kinds) >= KINDS_MAX:
            self._kinds.clear()
        self._kinds[kind] = (now, 0)
        if held:  # the text added has no `%`: the message formats as before
            record.msg = f"{record.msg} ({held} more like this held back)"
        return True


def throttle_logs(throttle: Throttle | None = None) -> Throttle:
    """Attach one `Throttle` to every handler of the server's loggers (once)."""
    throttle = throttle or Throttle()
    for name in LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, Throttle) for f in handler.filters):
                handler.addFilter(throttle)
    return throttle
