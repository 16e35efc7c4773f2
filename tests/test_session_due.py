"""`nothing_due`, the hook's cheap answer, against what preparing a turn really delivers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshline.session import SessionManager
from freshline.session.due import nothing_due
from freshline.store import SessionRecord, SessionState

from .conftest import Workspace

STEPS = st.lists(
    st.sampled_from(["write", "edit", "delete", "document", "deliver", "close", "resume",
                     "rescope"]),
    max_size=8,
)


def record(**changes: object) -> SessionRecord:
    base = dict(id="s", project="p", state=SessionState.ACTIVE, mode="live", created_at=0.0,
                resumed_at=None, cursor=3, manifest_epoch=1, dirty_key="k", held_key=None,
                manifest="", needs_manifest=False, resumed=False)
    return SessionRecord(**(base | changes))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("session", "epoch", "due"),
    [
        (record(), 3, False),
        (record(), 4, True),
        (record(cursor=None), 3, True),
        (record(cursor=5), 3, True),  # a log reset: the reader re-enumerates
        (record(needs_manifest=True), 3, True),
        (record(state=SessionState.LANDING), 3, True),
        (record(state=SessionState.CLOSED), 3, True),
        (record(pending_docs=["a.pdf"]), 3, True),
    ],
)
def test_nothing_due_table(session: SessionRecord, epoch: int, due: bool) -> None:
    assert nothing_due(session, epoch) is not due


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_when_nothing_is_due_preparing_delivers_nothing(ws: Workspace, steps: list[str]) -> None:
    ws.write("notes/a.md", "a")
    config = ws.configure({"p": {"include": ["notes"]}})
    manager = SessionManager(config)
    try:
        session = manager.new("p", external_id=f"x{len(steps)}:{'-'.join(steps)}",
                          convert=False).id
        for n, step in enumerate(steps):
            if step == "write":
                ws.write(f"notes/n{n}.md", str(n))
            elif step == "edit":
                ws.write("notes/a.md", "a" * (n + 2))
            elif step == "delete" and (ws.root / "notes/a.md").exists():
                (ws.root / "notes/a.md").unlink()
            elif step == "document":
                ws.write(f"notes/p{n}.html", f"<p>{n}</p>")
            elif step == "deliver" and manager.get(session).state is not SessionState.CLOSED:
                manager.prepare(session, "", conversation=False).accept()
            elif step == "close":
                manager.close_session(session)
            elif step == "resume":
                manager.resume(session, convert=False)
            elif step == "rescope":
                manager.settle()
                ws.configure({"p": {"include": ["notes", f"extra{n}"]}})
            manager.tracker.flush()
            s = manager.get(session)
            if nothing_due(s, manager.tracker.epoch("p")):
                turn = manager.prepare(session, "", conversation=False)
                assert (turn.manifest, turn.updates) == (None, None), steps[: n + 1]
    finally:
        manager.close()
