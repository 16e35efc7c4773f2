"""What the chat's status bar shows, read from the session layer (no textual here).

The bar fits its width by abbreviating, least important part first (documents, then the
cursor, then the project), and drops the documents only when nothing shorter fits. The
target state of an isolated conversation is never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from freshline.refs import short_ref
from freshline.session import SessionManager

SEPARATOR = " │ "
_DOC_STATES = ("ready", "stale", "pending", "failed")


@dataclass(frozen=True)
class Status:
    """One reading of a session's state, for the status bar and `/status`."""

    session: str
    project: str
    mode: str
    state: str
    epoch: int  # the project's epoch now
    cursor: int | None  # the epoch the agent was last told about (None: not seeded)
    documents: dict[str, int] = field(default_factory=dict)  # the project's, by state, now
    converting: bool = False  # a conversion run is in flight for the project
    target: str | None = None  # the checkout target an isolated conversation follows
    moved: bool = False  # the target moved past the last refresh parent

    @property
    def behind(self) -> bool:
        """Whether the next send has updates to deliver."""
        return self.cursor is None or self.cursor < self.epoch

    def segments(self) -> list[tuple[str, tuple[str, ...]]]:
        """Each part of the bar by name, as rich markup, longest form first, in order."""
        cursor = "unseeded" if self.cursor is None else str(self.cursor)
        fresh = "[yellow]behind[/]" if self.behind else "[green]fresh[/]"
        parts: list[tuple[str, tuple[str, ...]]] = [
            ("project", (f"[b]{self.project}[/b]{SEPARATOR}{self.mode}", f"[b]{self.project}[/b]")),
            ("cursor", (f"epoch {self.epoch} / cursor {cursor} {fresh}",
                        f"e{self.epoch}/c{cursor} {fresh}", fresh)),
        ]
        docs = self._documents()
        if docs:
            parts.append(("docs", docs))
        if self.target:
            moved = "[yellow]moved[/]" if self.moved else "up to date"
            name = short_ref(self.target)
            parts.append(("target", (f"target {name} {moved}", f"{name} {moved}")))
        return parts

    def _documents(self) -> tuple[str, ...]:
        shown = [(self.documents[s], s) for s in _DOC_STATES if self.documents.get(s)]
        if not shown and not self.converting:
            return ()
        busy = " [yellow](converting)[/]" if self.converting else ""
        full = "docs " + (", ".join(f"{n} {s}" for n, s in shown) or "none") + busy
        marks = {"ready": "✓", "stale": "~", "pending": "…", "failed": "✗"}
        short = "docs " + " ".join(f"{n}{marks[s]}" for n, s in shown) + (" ⟳" if busy else "")
        return (full, short.rstrip())

    def line(self, width: int = 200) -> str:
        """The status bar text (rich markup), fitted to `width` cells."""
        return fit(self.segments(), width)


# Abbreviated first to last; only the documents may be dropped, never the target state.
ABBREVIATE = ("docs", "cursor", "project", "target")
DROPPABLE = ("docs",)


def plain_length(markup: str) -> int:
    """The width of a markup string once rendered (tags removed)."""
    from rich.text import Text

    return Text.from_markup(markup).cell_len


def fit(segments: list[tuple[str, tuple[str, ...]]], width: int) -> str:
    """Join the segments, abbreviating in `ABBREVIATE` order, then dropping the
    `DROPPABLE` ones, until the line fits `width` (or nothing more can go)."""
    forms = dict(segments)
    chosen = dict.fromkeys(forms, 0)

    def text() -> str:
        return SEPARATOR.join(forms[name][chosen[name]] for name in forms)

    for name in (n for n in ABBREVIATE if n in forms):
        while plain_length(text()) > width and chosen[name] < len(forms[name]) - 1:
            chosen[name] += 1
    for name in (n for n in DROPPABLE if n in forms):
        if plain_length(text()) > width:
            del forms[name]
    return text()


def read_status(manager: SessionManager, session_id: str) -> Status:
    """Read a session's status now (the caller flushes first when it wants news)."""
    from freshline.materialize import census

    s = manager.get(session_id)
    target, moved = _target(manager, session_id) if s.mode == "isolated" else (None, False)
    entries = manager.tracker.files_in_scope(s.project)
    return Status(
        session=s.id,
        project=s.project,
        mode=s.mode,
        state=s.state.value,
        epoch=manager.tracker.epoch(s.project),
        cursor=s.cursor,
        documents=census(manager.materializer.store, manager.config.root, entries),
        converting=bool(manager.materializer.in_flight(s.project)),
        target=target,
        moved=moved,
    )


def _target(manager: SessionManager, session_id: str) -> tuple[str | None, bool]:
    """The conversation's checkout target and whether it moved past the last refresh."""
    events = manager.conversations.log(session_id)
    root = events[0].root if events else None
    if root is None or root.target is None:
        return None, False
    last = next((e.merged.to for e in reversed(events) if e.merged), root.base)
    now = manager.conversations.repo.git.rev_parse(root.target)
    return root.target, now is not None and now != last
