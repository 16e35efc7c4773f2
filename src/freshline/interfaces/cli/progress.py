"""Progress of the commands that take a while (`selftest`, `project add`, `session new`,
`materialize`): on a terminal, one transient line on standard error (rich's spinner, what
is under way, how far along once there is a count, the time it has taken), gone when the
command ends; nothing at all when standard error is not a terminal or under `--json`, so pipes
and scripts see exactly what they saw before."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from freshline.materialize import Progress


class Activity:
    """What the line shows; every method does nothing when progress is not shown."""

    def __init__(self, line: Any = None, task: Any = None) -> None:
        self._bar = line
        self._task = task

    def step(self, label: str) -> None:
        """Say what is under way now (no count)."""
        if self._bar is not None:
            self._bar.update(self._task, description=label, count="")

    def count(self, label: str, done: int, total: int | None) -> None:
        """Say what is under way and how far along it is: `done` of `total`."""
        if self._bar is not None:
            of = f" of {total}" if total is not None else ""
            self._bar.update(self._task, description=label, count=f"{done}{of}")

    def documents(self, p: Progress) -> None:
        """A materializer's progress callback: the document converting, done of total."""
        self.count(f"converting {p.path}", p.done, p.total)


def shown(as_json: bool) -> bool:
    """Whether progress is shown: standard error is a terminal, and not under `--json`."""
    return not as_json and sys.stderr.isatty()


@contextmanager
def activity(label: str, as_json: bool) -> Iterator[Activity]:
    """The progress line for the block, starting at `label` (see the module docstring)."""
    if not shown(as_json):
        yield Activity()
        return
    from rich.console import Console
    from rich.progress import Progress as Line
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"),
               TextColumn("{task.fields[count]}"), TimeElapsedColumn())
    with Line(*columns, console=Console(stderr=True), transient=True) as line:
        yield Activity(line, line.add_task(label, total=None, count=""))
