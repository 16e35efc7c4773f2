"""The open-files limit, and how many connections it leaves room for.

Every connection is an open file, and so is everything else the server opens: each
worker thread's store connection, the watcher, git, conversions, the files it reads. A
server whose connections take every file it may open fails at whatever needs one next.
So `serve` raises its soft limit to the hard one when it starts (as nginx's
`worker_rlimit_nofile` and systemd's services do), keeps `RESERVE` files for its own
work, and lets connections have the rest, up to `[server] max_connections`.
"""

from __future__ import annotations

import resource

RESERVE = 256  # files kept for the server's own work: ~40 worker threads' store files, …
FEWEST = 16  # a server with room for fewer connections than this does not start
UNBOUNDED = 65_536  # the soft limit asked for when the hard one is unlimited


def raise_file_limit() -> int:
    """Raise the soft open-files limit to the hard one (as far as the system allows);
    the soft limit now (`UNBOUNDED` for none)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return UNBOUNDED
    wanted = UNBOUNDED if hard == resource.RLIM_INFINITY else hard
    if wanted <= soft:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError):
        return soft
    return wanted


def connection_room(files: int, wanted: int) -> int:
    """How many connections may be open at once with `files` open files allowed: what
    the reserve leaves, at most `wanted` (0 or more)."""
    return max(0, min(wanted, files - RESERVE))
