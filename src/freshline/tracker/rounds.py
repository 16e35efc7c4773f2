"""Shared rounds: one run of a piece of work serves every caller that waited for it.

A server answers many calls at once, and each call needs the index to cover every change
made before it asked (a watcher's cookie, then a flush). Done per call, the flushes chain:
each waits for the one running, then runs its own. `Rounds` groups them as a database
groups commits: a caller joins the first round that starts after it asked (the round
running may have begun before its change); one caller leads that round, and the others
that joined it wait for its end and share it. However many callers, each waits for at
most the round running and the next one, and the work runs once per round.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Rounds:
    """Runs `work` in rounds, one at a time; `join()` returns once a round that started
    after the call has ended."""

    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work
        self._changed = threading.Condition()
        self._started = 0  # rounds started so far (the number of the latest)
        self._ended = 0  # the latest round that ended well
        self._running = False

    def join(self) -> None:
        """Wait for (or lead) the first round to start after now. A round whose work
        raised serves nobody: its leader raises, and those who waited for it join the
        next one."""
        with self._changed:
            wanted = self._started + 1
            while self._ended < wanted:
                if self._running:
                    self._changed.wait()
                else:
                    self._lead()

    def _lead(self) -> None:
        """Run the next round (called holding the condition; released while it works)."""
        self._started += 1
        number = self._started
        self._running = True
        ended = False
        self._changed.release()
        try:
            self.work()
            ended = True
        finally:
            self._changed.acquire()
            self._running = False
            if ended:
                self._ended = number
            self._changed.notify_all()
