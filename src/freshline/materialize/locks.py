"""Per-source locks that hold across threads and processes: `flock` on a file under
`<data_dir>/locks/`. A flock belongs to an open file description, so two opens in one
process exclude each other as two processes do, and the kernel drops the lock when its
holder dies. Lock files are pruned only with their source (an unlinked lock file could
be locked by one process while another creates and locks a new one)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from freshline.materialize.snapshots import snapshot_id


@contextmanager
def source_lock(data_dir: Path, source: str) -> Iterator[None]:
    """Hold the exclusive lock of one source document, waiting for it if needed.

    Best effort: where no lock file can be made (a read-only data dir) it runs unlocked,
    and the snapshot write that follows reports the real problem.
    """
    directory = data_dir / "locks"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / f"{snapshot_id(source)}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def prune_locks(data_dir: Path, keep: Iterable[str], dry_run: bool = False) -> list[Path]:
    """Remove the lock files of sources not in `keep`; return what went (`dry_run`: what
    would go)."""
    wanted = {f"{snapshot_id(source)}.lock" for source in keep}
    try:
        stale = [p for p in (data_dir / "locks").iterdir() if p.name not in wanted]
    except OSError:
        return []
    if dry_run:
        return stale
    removed = []
    for path in stale:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed
