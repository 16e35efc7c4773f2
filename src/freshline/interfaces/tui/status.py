"""What the chat's status bar shows, read from the session layer (no textual here)."""

from __future__ import annotations

from dataclasses import dataclass

from freshline.session import SessionManager


@dataclass(frozen=True)
class Status:
    """One reading of a session's state, for the status bar and `/status`."""

    session: str
    project: str
    mode: str
    state: str
    epoch: int  # the project's epoch now
    cursor: int | None  # the epoch the agent was last told about (None: not seeded)
    pending: int  # documents announced as converting
    failed: int  # documents announced as failed
    converting: bool  # a conversion run is in flight for the project
    target: str | None = None  # the checkout target an isolated conversation follows
    moved: bool = False  # the target moved past the last refresh parent

    @property
    def behind(self) -> bool:
        """Whether the next send has updates to deliver."""
        return self.cursor is None or self.cursor < self.epoch

    def line(self) -> str:
        """The status bar text (rich markup)."""
        cursor = "unseeded" if self.cursor is None else str(self.cursor)
        freshness = "[yellow]behind[/]" if self.behind else "[green]fresh[/]"
        parts = [
            f"[b]{self.project}[/b]",
            self.mode,
            f"epoch {self.epoch} / cursor {cursor} {freshness}",
            f"docs {self.pending} pending, {self.failed} failed"
            + (" [yellow](converting)[/]" if self.converting else ""),
        ]
        if self.target:
            moved = "[yellow]moved[/]" if self.moved else "up to date"
            parts.append(f"target {short_ref(self.target)} {moved}")
        return " │ ".join(parts)


def short_ref(name: str) -> str:
    """A ref name as people write it (`refs/heads/main` → `main`, commits shortened)."""
    for prefix in ("refs/heads/", "refs/tags/", "refs/remotes/"):
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name[:12] if len(name) == 40 else name


def read_status(manager: SessionManager, session_id: str) -> Status:
    """Read a session's status now (the caller flushes first when it wants news)."""
    s = manager.get(session_id)
    target, moved = _target(manager, session_id) if s.mode == "isolated" else (None, False)
    return Status(
        session=s.id,
        project=s.project,
        mode=s.mode,
        state=s.state.value,
        epoch=manager.tracker.epoch(s.project),
        cursor=s.cursor,
        pending=len(s.pending_docs),
        failed=len(s.announced_failures),
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
