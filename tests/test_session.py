"""Sessions and delivery (DESIGN section 7) with real files, tracker and materializer.

`deliver` does what the agent runtime does around a model call: prepare, send the wire
prompt to a backend, record the turn, accept it, then convert in the background.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from freshline.agent.backends import get_backend
from freshline.agent.backends.base import Backend
from freshline.agent.errors import BackendError, BackendUnreachable
from freshline.agent.messages import AssistantReply, Message, TextCallback, ToolSpec
from freshline.config import Config
from freshline.context import manifest_from_json, render_manifest
from freshline.context.phrases import FOLDED_HEADING, FORGOTTEN, IN_PROGRESS, RESUMED
from freshline.conversation import Author, Event
from freshline.errors import ConfigError, UsageError
from freshline.session import PreparedTurn, SessionManager
from freshline.store import SessionRecord, SessionState
from tests.conftest import Workspace
from tests.docgen import write_pdf


def unused(s: SessionRecord) -> SessionRecord:
    """The record less when it was last used, which every prepared turn notes."""
    return replace(s, active_at=None)


ECHO = get_backend("echo")
CORRUPT_PDF = b"%PDF-1.4\nthis is not really a pdf\n%%EOF\n"


class Refusing(Backend):
    """A backend that never accepts a prompt."""

    name = "refusing"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_text: TextCallback | None = None,
    ) -> AssistantReply:
        self.seen.append(messages[-1].content)
        raise BackendUnreachable("refusing: no answer (test backend)")


def deliver(
    m: SessionManager, session_id: str, message: str = "go", backend: Backend = ECHO
) -> PreparedTurn:
    """One send as the runtime makes it; raises the backend's error with nothing accepted."""
    turn = m.prepare(session_id, message)
    reply = backend.complete([Message.user(turn.wire_prompt)], [])
    turn.record([Event(Author.ASSISTANT, reply.text)])
    turn.accept()
    m.materialize_async(turn.session.project)
    return turn


def manifest(s: SessionRecord) -> str:
    """The manifest block a session record holds (it stores the manifest's input)."""
    return render_manifest(manifest_from_json(s.manifest))


def entries(block: str | None, heading: str) -> list[str]:
    """The `- ` lines under a heading of a block (empty when the heading is absent)."""
    lines = (block or "").splitlines()
    for i, line in enumerate(lines):
        if line.startswith(heading):
            out = []
            for item in lines[i + 1 :]:
                if not item.startswith("- "):
                    break
                out.append(item[2:])
            return out
    return []


@pytest.fixture
def managers() -> Iterator[Callable[[Config], SessionManager]]:
    """Make session managers that are closed (workers stopped) after the test."""
    made: list[SessionManager] = []

    def make(config: Config) -> SessionManager:
        made.append(SessionManager(config))
        return made[-1]

    yield make
    for m in made:
        m.close()


Make = Callable[[Config], SessionManager]


def absolute(m: SessionManager, rel: str) -> str:
    return str(Path(m.config.root) / rel)


def started(ws: Workspace, make: Make, projects: dict | None = None, **settings: object):
    """A manager and a session that has had its first turn accepted."""
    m = make(ws.configure(projects or {"p": {"include": ["notes"]}}, **settings))
    s = m.new("p")
    first = deliver(m, s.id, "hello")
    assert first.manifest is not None
    m.settle()
    return m, s.id


# -- the two reported failures --------------------------------------------------------------


def test_new_note_in_ongoing_session_is_named_on_the_next_send(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    ws.write("notes/new idea.md", "fresh")
    turn = deliver(m, sid, "what is new?")
    assert turn.manifest is None
    assert entries(turn.updates, "Created:") == [absolute(m, "notes/new idea.md")]
    assert turn.wire_prompt.endswith("what is new?")
    assert deliver(m, sid).updates is None  # announced once


def test_reopening_after_a_new_pdf_gives_its_snapshot(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m = managers(ws.configure({"p": {"include": ["notes"]}}))
    landing = m.new("p")
    assert m.new("p").id == landing.id  # a clean landing is reused
    write_pdf(ws.root / "notes/paper.pdf", [["Attention is all you need"]])
    reopened = m.new("p")
    assert reopened.id != landing.id  # a dirty landing never is
    snapshot = m.materializer.store.snapshot_path("notes/paper.pdf")
    pointers = entries(manifest(reopened), "Converted documents")
    assert pointers == [f"{absolute(m, 'notes/paper.pdf')} → {snapshot}"]
    assert "Attention is all you need" in snapshot.read_text()
    assert reopened.cursor == reopened.manifest_epoch  # complete: seeded
    turn = deliver(m, reopened.id)
    assert turn.manifest == manifest(reopened) and turn.updates is None


# -- acknowledged cursor ------------------------------------------------------------------


def test_failed_send_advances_nothing_and_the_next_repeats(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    before = m.get(sid)
    ws.write("notes/b.md", "b")
    ws.write("notes/a.md", "changed")
    refusing = Refusing()
    with pytest.raises(BackendError):
        deliver(m, sid, "first try", refusing)
    assert unused(m.get(sid)) == unused(before)
    again = deliver(m, sid, "second try")
    assert again.updates is not None and again.updates in refusing.seen[0]
    assert entries(again.updates, "Created:") == [absolute(m, "notes/b.md")]
    assert entries(again.updates, "Modified:") == [absolute(m, "notes/a.md")]
    assert m.get(sid).cursor == again.covers > before.cursor


def test_a_failed_first_send_keeps_the_manifest_for_the_next(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m = managers(ws.configure({"p": {"include": ["notes"]}}))
    s = m.new("p")
    with pytest.raises(BackendError):
        deliver(m, s.id, "hi", Refusing())
    assert m.get(s.id).state is SessionState.LANDING
    turn = deliver(m, s.id, "hi")
    assert turn.manifest == manifest(s)
    assert m.get(s.id).state is SessionState.ACTIVE
    assert deliver(m, s.id).manifest is None


def test_fanout_never_advances(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    ws.write("notes/b.md", "b")
    before = m.get(sid)
    fan = m.prepare(sid, "to everyone", fanout=True)
    assert entries(fan.updates, "Created:") == [absolute(m, "notes/b.md")]
    fan.accept()
    assert not fan.accepted and unused(m.get(sid)) == unused(before)
    assert deliver(m, sid).updates == fan.updates


def test_an_older_turn_accepted_late_does_not_move_the_cursor_back(
    ws: Workspace, managers: Make
):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    ws.write("notes/b.md", "b")
    older = m.prepare(sid, "one")
    ws.write("notes/c.md", "c")
    newer = m.prepare(sid, "two")
    assert newer.covers > older.covers
    newer.accept()
    older.accept()
    assert m.get(sid).cursor == newer.covers


# -- scoping -------------------------------------------------------------------------------


def test_renames_out_in_and_within(ws: Workspace, managers: Make):
    for rel in ("notes/out.md", "notes/stay.md", "other/in.md"):
        ws.write(rel, f"content of {rel}")
    m, sid = started(ws, managers)
    os.rename(ws.root / "notes/out.md", ws.root / "other/out.md")
    os.rename(ws.root / "other/in.md", ws.root / "notes/in.md")
    os.rename(ws.root / "notes/stay.md", ws.root / "notes/moved.md")
    turn = deliver(m, sid)
    left = "Left the project (the files are still there):"
    assert entries(turn.updates, left) == [
        f"{absolute(m, 'notes/out.md')} (moved or renamed out of the project)"]
    assert "Deleted:" not in (turn.updates or "")
    assert entries(turn.updates, "Created:") == [absolute(m, "notes/in.md")]
    renamed = f"{absolute(m, 'notes/stay.md')} → {absolute(m, 'notes/moved.md')}"
    assert entries(turn.updates, "Renamed:") == [renamed]
    assert "other/" not in turn.wire_prompt


def test_out_of_scope_and_internal_paths_never_appear(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers, {"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    ws.write("other/secret.md", "not for p")
    ws.write(".freshline/scratch.md", "internal")
    ws.write("notes/sub/.git/HEAD", "ref: refs/heads/main")
    ws.write("notes/visible.md", "v")
    turn = deliver(m, sid)
    assert entries(turn.updates, "Created:") == [absolute(m, "notes/visible.md")]
    for hidden in ("secret", "scratch", ".git", "freshline.toml"):
        assert hidden not in turn.wire_prompt


def test_a_compacted_log_tells_what_it_dropped_per_folder(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers, change_log_cap=2)
    for i in range(4):
        ws.write(f"notes/n{i}.md", str(i))
        m.tracker.flush()
    turn = deliver(m, sid)
    assert entries(turn.updates, FOLDED_HEADING) == [
        f"{absolute(m, 'notes')}/: 2 created (epochs 1–2)"]
    assert entries(turn.updates, "Created:") == [absolute(m, "notes/n2.md"),
                                                 absolute(m, "notes/n3.md")]
    assert "n0.md" not in turn.wire_prompt and turn.manifest is None
    assert m.get(sid).cursor == m.tracker.epoch("p")
    assert deliver(m, sid).updates is None


def test_config_change_names_the_newly_included_sources(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    ws.write("drafts/idea.md", "i")
    m, sid = started(ws, managers)
    widened = managers(ws.configure({"p": {"include": ["notes", "drafts"]}}))
    turn = deliver(widened, sid)
    assert entries(turn.updates, "Scope changed:") == [
        f"now included: folder {absolute(m, 'drafts')}/"
    ]
    assert entries(turn.updates, "Entered the project:") == [
        f"{absolute(m, 'drafts/idea.md')} (now included by folder {absolute(m, 'drafts')}/)"]
    assert deliver(widened, sid).updates is None


# -- documents ------------------------------------------------------------------------------


def test_pending_document_gets_its_snapshot_pointer_later(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    write_pdf(ws.root / "notes/late.pdf", [["Late paper"]])
    first = deliver(m, sid)
    pdf = absolute(m, "notes/late.pdf")
    assert entries(first.updates, "Created:") == [f"{pdf} ({IN_PROGRESS})"]
    assert m.get(sid).pending_docs == ["notes/late.pdf"]
    m.settle()
    ready = deliver(m, sid)
    snapshot = m.materializer.store.snapshot_path("notes/late.pdf")
    assert entries(ready.updates, "Snapshots ready since") == [f"{pdf} → {snapshot}"]
    assert m.get(sid).pending_docs == []
    assert deliver(m, sid).updates is None


def test_failure_is_announced_once(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    ws.write("notes/broken.pdf", CORRUPT_PDF)
    deliver(m, sid)  # in progress
    m.settle()
    failed = deliver(m, sid)
    [line] = entries(failed.updates, "Documents that failed to convert:")
    assert line.startswith(f"{absolute(m, 'notes/broken.pdf')} (conversion failed")
    assert "notes/broken.pdf" in m.get(sid).announced_failures
    m.settle()
    assert deliver(m, sid).updates is None


def test_deleted_document_invalidates_its_snapshot(ws: Workspace, managers: Make):
    write_pdf(ws.root / "notes/gone.pdf", [["Soon gone"]])
    m, sid = started(ws, managers)
    snapshot = m.materializer.store.snapshot_path("notes/gone.pdf")
    assert str(snapshot) in manifest(m.get(sid))
    (ws.root / "notes/gone.pdf").unlink()
    turn = deliver(m, sid)
    assert entries(turn.updates, "Deleted:") == [absolute(m, "notes/gone.pdf")]
    invalid = entries(turn.updates, "Snapshots no longer valid")
    assert invalid == [f"{snapshot} (was the snapshot of {absolute(m, 'notes/gone.pdf')})"]


def never_settles(m: SessionManager, ws: Workspace, rel: str) -> None:
    """A corrupt document whose failure marker cannot be written: it stays pending."""
    m.materializer.store.marker_path(rel).mkdir(parents=True)
    ws.write(rel, CORRUPT_PDF)


def test_config_shrink_prunes_carried_documents(ws: Workspace, managers: Make):
    projects = {"p": {"include": ["notes", "docs"]}}
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers, projects)
    never_settles(m, ws, "docs/stuck.pdf")
    ws.write("docs/broken.pdf", CORRUPT_PDF)
    deliver(m, sid)
    m.settle()
    deliver(m, sid)
    m.settle()
    s = m.get(sid)
    assert s.pending_docs == ["docs/stuck.pdf"]
    assert list(s.announced_failures) == ["docs/broken.pdf"]
    narrowed = managers(ws.configure({"p": {"include": ["notes"]}}))
    turn = deliver(narrowed, sid)
    assert "stuck.pdf" not in (entries(turn.updates, "Created:") + entries(turn.updates, "Doc"))
    s = narrowed.get(sid)
    assert s.pending_docs == [] and s.announced_failures == {}


# -- resume and landings -------------------------------------------------------------------


def test_resume_delivers_a_fresh_manifest_with_the_resumed_note(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    m.close_session(sid)
    with pytest.raises(UsageError):
        m.prepare(sid, "hello?")
    ws.write("notes/while closed.md", "w")
    resumed = m.resume(sid)
    assert resumed.cursor == resumed.manifest_epoch == m.tracker.epoch("p")  # complete
    turn = deliver(m, sid, "back")
    assert turn.manifest is not None and RESUMED in turn.manifest
    assert absolute(m, "notes/while closed.md") in turn.manifest
    assert turn.updates is None
    assert deliver(m, sid).manifest is None


def test_resume_that_did_not_cover_everything_keeps_the_cursor(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    cursor = m.get(sid).cursor
    ws.write("notes/b.md", "b")
    never_settles(m, ws, "notes/stuck.pdf")
    resumed = m.resume(sid)
    assert resumed.cursor == cursor and resumed.manifest_epoch > cursor
    turn = deliver(m, sid)
    assert RESUMED in (turn.manifest or "")
    created = entries(turn.updates, "Created:")
    assert absolute(m, "notes/b.md") in created


def test_dirty_landing_holds_and_sends_a_fresh_manifest(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m = managers(ws.configure({"p": {"include": ["notes"]}}))
    s = m.new("p")
    ws.write("notes/b.md", "b")
    turn = deliver(m, s.id)
    assert turn.held is not None and "changed before the first send" in turn.held
    assert turn.manifest is not None and absolute(m, "notes/b.md") in turn.manifest
    assert turn.updates is None  # the fresh manifest already covers b.md
    after = m.get(s.id)
    assert manifest(after) == turn.manifest and after.cursor == m.tracker.epoch("p")


def test_failed_re_materialization_holds_once_then_sends(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m = managers(ws.configure({"p": {"include": ["notes"]}}))
    s = m.new("p")
    never_settles(m, ws, "notes/stuck.pdf")
    with pytest.raises(BackendError):
        deliver(m, s.id, "first", Refusing())
    turn = deliver(m, s.id, "second")
    assert turn.held is None  # no hold loop: this dirty key already held once
    assert turn.manifest == manifest(s)  # the stale one
    assert absolute(m, "notes/stuck.pdf") in entries(turn.updates, "Created:")[0]
    held = m.prepare(s.id, "third")
    assert held.held is None and held.manifest is None


def test_a_failed_hold_says_why(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m = managers(ws.configure({"p": {"include": ["notes"]}}))
    s = m.new("p")
    never_settles(m, ws, "notes/stuck.pdf")
    turn = m.prepare(s.id, "first")
    assert turn.held is not None and "sent with the previous manifest" in turn.held
    assert turn.manifest == manifest(s)


# -- the in-scope listing a live turn records ------------------------------------------------


def test_in_scope_listing_follows_the_log(ws: Workspace, managers: Make):
    ws.write("notes/plain.md", "no tag")
    ws.write("notes/tagged.md", "about #paper")
    ws.write("elsewhere/x.md", "#paper too")
    m = managers(ws.configure({"p": {"include": ["#paper", "notes/keep"]}}))
    s = m.new("p")

    def check() -> list[str]:
        m.tracker.flush()
        listed = m.in_scope.entries("p")
        assert listed == m.tracker.files_in_scope("p")
        return [e.path for e in listed]

    assert check() == ["elsewhere/x.md", "notes/tagged.md"]
    ws.write("notes/plain.md", "now a #paper")
    (ws.root / "notes/tagged.md").write_text("tag removed")
    os.rename(ws.root / "elsewhere", ws.root / "moved")
    assert check() == ["moved/x.md", "notes/plain.md"]
    ws.write("notes/keep/k.md", "kept")
    assert check() == ["moved/x.md", "notes/keep/k.md", "notes/plain.md"]
    deliver(m, s.id)
    assert m.conversations.log(s.id)  # the live turn was recorded from the listing


def test_in_scope_listing_catches_up_on_what_was_undone(ws: Workspace, managers: Make):
    """A change undone is not told to a session (net), but the listing holds index
    entries: the reverted file's entry (its stat) moved, and the catch-up must see it."""
    ws.write("notes/a.md", "same")
    ws.write("notes/b.md", "gone and back")
    m = managers(ws.configure({"p": {"include": ["notes"]}}))
    m.tracker.flush()
    assert [e.path for e in m.in_scope.entries("p")] == ["notes/a.md", "notes/b.md"]
    ws.write("notes/a.md", "edited")
    (ws.root / "notes/b.md").unlink()
    m.tracker.flush()  # a scan between the change and its undoing
    ws.write("notes/a.md", "same")
    ws.write("notes/b.md", "gone and back")
    for name in ("a", "b"):  # settled stamps, which the index keeps
        os.utime(ws.root / f"notes/{name}.md", (1_500_000_000, 1_500_000_000))
    m.tracker.flush()
    assert m.in_scope.entries("p") == m.tracker.files_in_scope("p")


def test_a_project_removed_and_added_again_is_re_enumerated(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    m, sid = started(ws, managers)
    ws.write("notes/b.md", "b")
    deliver(m, sid)
    assert m.get(sid).cursor == 1
    managers(ws.configure({"q": {"include": ["notes"]}})).tracker.flush()  # p is removed
    ws.write("notes/while-away.md", "nobody logged this for p")
    managers(ws.config()).tracker.flush()
    again = managers(ws.configure({"p": {"include": ["notes"]}}))
    turn = deliver(again, sid)
    assert FORGOTTEN in (turn.updates or "")  # what happened meanwhile is unknown:
    assert turn.manifest is not None and "while-away.md" in turn.manifest  # the project now
    assert again.get(sid).cursor == again.tracker.epoch("p") == 2
    assert deliver(again, sid).updates is None  # not stuck re-announcing the marker
    ws.write("notes/c.md", "c")
    assert entries(deliver(again, sid).updates, "Created:") == [absolute(m, "notes/c.md")]


def test_a_long_lived_manager_sees_an_edited_config(ws: Workspace, managers: Make):
    ws.write("notes/a.md", "a")
    ws.write("drafts/idea.md", "i")
    m, sid = started(ws, managers)
    ws.configure({"p": {"include": ["notes", "drafts"]}})
    turn = deliver(m, sid)
    assert entries(turn.updates, "Entered the project:") == [
        f"{absolute(m, 'drafts/idea.md')} (now included by folder {absolute(m, 'drafts')}/)"]
    assert [e.path for e in m.in_scope.entries("p")] == ["drafts/idea.md", "notes/a.md"]
    (ws.root / "freshline.toml").write_text("[projects.p\n")
    with pytest.raises(ConfigError):
        m.prepare(sid, "broken config")
