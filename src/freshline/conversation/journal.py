"""The turn journal: what a turn must undo if it never finishes.

Before a turn touches an isolated worktree, its holder writes `.freshline/turns/<id>.json`
(the conversation head and the worktree's tree when the turn began); recording the turn
or undoing it removes the file. The journal is written and removed only under the
conversation's turn lock, so a journal found by whoever takes the lock next belongs to a
turn whose process died: recovery rolls it back (see recovery.py).

`checkpoint(step)` is the test hook of `freshline.killpoint`: when FRESHLINE_KILL_AT names
the step, the process kills itself with SIGKILL there, so tests can stop a turn at every
step without timing.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from freshline.killpoint import KILL_AT as KILL_AT
from freshline.killpoint import checkpoint as checkpoint


@dataclass(frozen=True)
class Journal:
    """An unfinished turn: the ref's value and the worktree's tree when it began."""

    head: str
    tree: str
    pid: int


def write(path: Path, head: str, tree: str) -> None:
    """Record a turn as begun (atomically: a reader sees the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = Journal(head, tree, os.getpid())
    partial = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps(asdict(record)), encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)  # a full disk: nothing half-written stays
        raise


def read(path: Path) -> Journal | None:
    """The unfinished turn recorded at `path`; an unreadable record (which an atomic
    write never leaves) reads as a turn that began at an unknown point (empty ids)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Journal(str(data["head"]), str(data["tree"]), int(data["pid"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return Journal("", "", 0)


def clear(path: Path) -> None:
    """Record the turn as finished (recorded or undone)."""
    path.unlink(missing_ok=True)

