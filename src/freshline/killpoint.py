"""A test hook: when FRESHLINE_KILL_AT names a step, the process kills itself there.

`checkpoint(step)` sends the process SIGKILL when `$FRESHLINE_KILL_AT` is `step`, so
tests can stop a turn, a flush or the service at every step without timing: nothing is
cleaned up, as when the machine loses power or a user runs `kill -9`.
"""

from __future__ import annotations

import os
import signal

KILL_AT = "FRESHLINE_KILL_AT"


def checkpoint(step: str) -> None:
    """Kill this process here when the test hook names `step`."""
    if os.environ.get(KILL_AT) == step:
        os.kill(os.getpid(), signal.SIGKILL)
