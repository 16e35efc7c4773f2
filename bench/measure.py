"""What the bench scripts share: timing one process by wall clock and by CPU."""

from __future__ import annotations

import resource
import subprocess
import time


def timed(command: list[str], stdin: str = "") -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one process: the machine is shared,
    and CPU time says what the work costs whatever else runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, input=stdin, text=True, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
