"""Paging the full list of changes that a rolled-up updates block counted in groups.

`page_changes` cuts the updates block's body, rendered with nothing folded, into pages
that each fit the channel's budget. A page that starts inside a section repeats its
heading with "(continued)". The pages are a pure function of the input, so asking again
for page N gives the same page while nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from freshline.errors import UsageError

from .budget import Budget, Meter
from .layout import Folds, write
from .model import UpdatesInput
from .updates import updates_plan
from .wire import count, show_text

_NUMBER = 10**6  # page numbers are reserved room for this many digits
_CONTINUED = " (continued)"


@dataclass(frozen=True)
class ChangesPage:
    """One page of a project's changes after epoch `since`."""

    project: str
    since: int
    epoch: int  # the epoch the list reaches
    page: int  # from 1
    pages: int
    text: str


def page_changes(u: UpdatesInput, page: int, budget: Budget) -> ChangesPage:
    """Page `page` (from 1) of every change in `u`, within `budget` as its meter counts.
    Raises UsageError for a page that does not exist."""
    plan = updates_plan(u)
    lines = write(plan, Folds()).split("\n")[2:-1] if plan else []  # body, no instruction
    room = budget.chars - budget.meter.overhead - _room(u, budget.meter)
    pages = _pack(lines, room, budget.meter)
    if not 1 <= page <= max(len(pages), 1):
        raise UsageError(f"page {page} does not exist: the changes fill {len(pages) or 1} page(s)")
    body = pages[page - 1] if pages else ["No changes."]
    total = max(len(pages), 1)
    text = "\n".join([_header(u, page, total), *body, _footer(page, total)])
    return ChangesPage(u.project, u.from_epoch, u.to_epoch, page, total, text)


def _header(u: UpdatesInput, page: int, pages: int) -> str:
    return (f"Changes to {show_text(u.project)} after epoch {u.from_epoch} "
            f"(up to epoch {u.to_epoch}), page {count(page)} of {count(pages)}:")


def _footer(page: int, pages: int) -> str:
    return f"Next: page={page + 1}." if page < pages else "This is the last page."


def _room(u: UpdatesInput, meter: Meter) -> int:
    """What a page's header and footer take at most (with the newlines around them)."""
    return meter.size(_header(u, _NUMBER, _NUMBER) + _footer(_NUMBER, _NUMBER + 1) + "\n\n")


def _pack(lines: list[str], room: int, meter: Meter) -> list[list[str]]:
    """`lines` cut into pages of at most `room` characters. A heading never ends a page;
    a page that starts among a heading's entries repeats it, "(continued)"."""
    pages: list[list[str]] = []
    current: list[str] = []
    used = 0
    heading = ""
    for line in lines:
        entry = line.startswith("- ")
        heading = heading if entry else line
        if current and used + meter.size(line + "\n") > room:
            carried = [] if current[-1].startswith("- ") else [current.pop()]
            if current:
                pages.append(current)
            if entry and not carried and heading:
                carried = [_fit(heading + _CONTINUED, room // 2, meter)]
            current, used = carried, sum(meter.size(c + "\n") for c in carried)
        fitted = _fit(line, room - used, meter)
        current.append(fitted)
        used += meter.size(fitted + "\n")
    if current:
        pages.append(current)
    return pages


def _fit(line: str, room: int, meter: Meter) -> str:
    """`line`, shortened with `…` if it alone would not fit in `room` (a huge name)."""
    if meter.size(line + "\n") <= room:
        return line
    while line and meter.size(line + "…\n") > room:
        line = line[: len(line) * 3 // 4]
    return line + "…"
