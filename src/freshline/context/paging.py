"""Paging the full lists behind a rolled-up block: a project's changes, and its files.

`page_changes` cuts the updates block's body, rendered with nothing folded, into pages
that each fit the channel's budget; `page_files` does the same with the manifest's (every
file, every document with its snapshot). Each may list one folder's alone (`within`: the
changes whose path or old path lies under it, the paths of a git operation or refresh
that do; scope changes are the whole project's and stay out). A page that starts inside a
section repeats its heading with "(continued)". The pages are a pure function of the
input, so asking again for page N gives the same page while nothing changed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, replace

from freshline.errors import UsageError
from freshline.names import ESCAPE

from . import phrases
from .budget import Budget, Meter
from .layout import Folds, Plan, WayBack, write
from .manifest import manifest_plan
from .model import ManifestInput, UpdatesInput
from .updates import updates_plan
from .wire import count, show_text

_NUMBER = 10**6  # page numbers are reserved room for this many digits
_CONTINUED = " (continued)"

Header = Callable[[int, int], str]  # (page, pages) → the page's first line


@dataclass(frozen=True)
class ChangesPage:
    """One page of a project's changes after epoch `since` (or of its files: `since`
    and `epoch` are then both the epoch the listing reflects)."""

    project: str
    since: int
    epoch: int  # the epoch the list reaches
    page: int  # from 1
    pages: int
    text: str


def page_changes(u: UpdatesInput, page: int, budget: Budget, folder: str = "") -> ChangesPage:
    """Page `page` (from 1) of every change in `u`, or of those under `folder`
    (workspace-relative), within `budget` as its meter counts. Raises UsageError for a
    page that does not exist."""
    folder = _folder(folder)
    if u.compacted:
        lines = [phrases.forgotten_page(budget, u.project, u.from_epoch)]
    else:
        plan = updates_plan(within(u, folder) if folder else u)
        lines = _body(plan) if plan else []
    where = f" under {phrases.folder(u.root, folder)}" if folder else ""

    def header(n: int, pages: int) -> str:
        return (f"Changes to {show_text(u.project)}{where} after epoch {u.from_epoch} "
                f"(up to epoch {u.to_epoch}), page {count(n)} of {count(pages)}:")

    text, n, pages = _page(lines, page, budget, header, "No changes.")
    return ChangesPage(u.project, u.from_epoch, u.to_epoch, n, pages, text)


def page_files(m: ManifestInput, page: int, budget: Budget, folder: str = "") -> ChangesPage:
    """Page `page` of every file and document in `m` (which holds all its files), or of
    those under `folder` (workspace-relative), within `budget`. UsageError for a page
    that does not exist."""
    folder = _folder(folder)
    if folder:
        m = replace(m, files=tuple(f for f in m.files or () if _under(f, folder)),
                    documents=tuple(d for d in m.documents if _under(d.path, folder)))
    plan = manifest_plan(m)
    plan.parts = [p for p in plan.parts if not isinstance(p, WayBack)]
    lines = _body(plan)
    where = f" under {phrases.folder(m.root, folder)}" if folder else ""

    def header(n: int, pages: int) -> str:
        return (f"Files and documents of {show_text(m.project)}{where} (epoch {m.epoch}), "
                f"page {count(n)} of {count(pages)}:")

    text, n, pages = _page(lines, page, budget, header, "No files.")
    return ChangesPage(m.project, m.epoch, m.epoch, n, pages, text)


def within(u: UpdatesInput, folder: str) -> UpdatesInput:
    """`u` with only what lies under `folder` (workspace-relative, normalized): the path
    changes whose path or old path does, a git operation's and a refresh's paths that do,
    the counts of earlier changes in its folders, the documents and reads there. Scope
    changes are left out: they are the whole project's."""
    def under(*paths: str | None) -> bool:
        return any(p is not None and _under(p, folder) for p in paths)

    git = [replace(op, paths=kept, count=len(kept)) for op in u.git
           if (kept := tuple(p for p in op.paths if under(p)))]
    refreshed = [replace(r, paths=tuple(p for p in r.paths if under(p)),
                         conflicts=tuple(p for p in r.conflicts if under(p)))
                 for r in u.refreshed]
    return replace(
        u, changes=tuple(c for c in u.changes if under(c.path, c.old_path)),
        documents=tuple(d for d in u.documents if under(d.path)),
        ready_documents=tuple(d for d in u.ready_documents if under(d.path)),
        failed_documents=tuple(d for d in u.failed_documents if under(d.path)),
        invalid_snapshots=tuple(s for s in u.invalid_snapshots if under(s[0])),
        folded=tuple(g for g in u.folded if g.entry is None and under(g.folder)),
        config=(), refreshed=tuple(r for r in refreshed if r.paths or r.conflicts),
        git=tuple(git), stale=tuple(r for r in u.stale if under(r.path, r.new_path)),
        rewound=tuple(replace(r, paths=tuple(p for p in r.paths if under(p)))
                      for r in u.rewound))


def _folder(folder: str) -> str:
    """A folder as the paging takes it: workspace-relative, "" for the root."""
    folder = posixpath.normpath(folder).strip("/") if folder else ""
    return "" if folder == "." else folder


def _under(path: str, folder: str) -> bool:
    return not folder or path == folder or path.startswith(folder + "/")


def _body(plan: Plan) -> list[str]:
    """A block's list lines, unfolded: no tags, no instruction, no legend (a page that
    needs it carries its own)."""
    plan.legend = ""
    return write(plan, Folds()).split("\n")[2:-1]


def _page(
    lines: list[str], page: int, budget: Budget, header: Header, empty: str
) -> tuple[str, int, int]:
    """Page `page` of `lines` between its header and footer (and, when it shows a name
    escaped, how to read names back): its text, number, and how many pages there are."""
    commanded = bool(budget.command)
    legend = [phrases.READ_BACK] if any(ESCAPE in line for line in lines) else []
    room = budget.chars - budget.meter.overhead - _room(header, commanded, budget.meter) \
        - sum(budget.meter.size(line + "\n") for line in legend)
    pages = _pack(lines, room, budget.meter)
    total = max(len(pages), 1)
    if not 1 <= page <= total:
        raise UsageError(f"page {page} does not exist: the list fills {total} page(s)")
    body = pages[page - 1] if pages else [empty]
    ends = [_footer(page, total, commanded)]
    if any(ESCAPE in line for line in body):
        ends += legend
    return "\n".join([header(page, total), *body, *ends]), page, total


def _footer(page: int, pages: int, commanded: bool) -> str:
    if page >= pages:
        return "This is the last page."
    return f"Next: the same command with --page {page + 1}." if commanded else \
        f"Next: page={page + 1}."


def _room(header: Header, commanded: bool, meter: Meter) -> int:
    """What a page's header and footer take at most (with the newlines around them)."""
    widest = header(_NUMBER, _NUMBER) + _footer(_NUMBER, _NUMBER + 1, commanded)
    return meter.size(widest + "\n\n")


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
