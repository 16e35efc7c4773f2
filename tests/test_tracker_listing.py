"""A fresh workspace's first flush may list its files and read them later.

A flush that may defer (a hook opening a session) fills an empty index from the folders'
listings alone (names and inodes, no lstat); the next flush that may not defer (the
watcher's first full scan) reads every listed file before it compares: nothing is logged
for a file untouched since, and what changed meanwhile is told (`tracker/listing.py`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from freshline.interfaces import autostart
from freshline.store import Store
from freshline.store.records import UNHASHED, ChangeKind, FileKind, IndexEntry
from freshline.tracker import scan as scan_module
from freshline.tracker.hashing import MODE_FILE, blob_of
from freshline.tracker.listing import (
    UNHASHED_META,
    UNSTATED,
    listed_entry,
    stat_key,
    twin_blobs,
    unstated_entry,
)

from .conftest import StoreBackend, Workspace, wait_for
from .test_tracker_stateful import BODIES, NAMES, TrackerMachine

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED
L = ChangeKind.LEFT
FILES = ["notes/a.md", "notes/b.md", "notes/sub/c.md", "notes/d.txt", "other/e.md"]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the scanner reads (hashes) from now on, workspace-relative."""
    seen: list[str] = []
    real = scan_module.blob_id_file

    def counting(path: str, size: int) -> tuple[str, bytes]:
        seen.append(os.fsdecode(path).split("/ws/", 1)[1])
        return real(path, size)

    monkeypatch.setattr(scan_module, "blob_id_file", counting)
    return seen


def age(path: Path, seconds: float = 60) -> None:
    """Give a file an mtime in the past: a scan may trust its stat (not racily clean)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def vault(ws: Workspace) -> Workspace:
    """Files written a while ago, a project by path (no scope reads tags)."""
    for i, path in enumerate(FILES):
        age(ws.write(path, f"# {path}\nbody {i}\n"))
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def paths(ws: Workspace, project: str = "p") -> list[str]:
    return [e.path for e in ws.tracker().files_in_scope(project)]


def logged(ws: Workspace, since: int = 0) -> list[tuple[ChangeKind, str, str | None]]:
    answer = ws.tracker().changes_since("p", since)
    return sorted((c.kind, c.path, c.old_path) for c in answer.changes)


@pytest.mark.parametrize(("rel", "parsed"), [("a/b.md", False), ("D.MD", False),
                                             ("c.pdf", True), ("e", True)])
def test_an_entry_listed_by_name_is_the_record_its_fields_make(rel: str, parsed: bool) -> None:
    # Made without the dataclass's `__init__` (a first call makes one per file): every
    # field of the record is filled, as `__init__` would fill it.
    listed = unstated_entry(rel, 7, 9)
    assert listed == IndexEntry(rel, FileKind.FILE, UNSTATED, UNSTATED, 7, 9, UNHASHED,
                                MODE_FILE, parsed=parsed)
    assert vars(listed).keys() == {f.name for f in fields(IndexEntry)}
    with pytest.raises(FrozenInstanceError):
        listed.path = "elsewhere"  # type: ignore[misc]


def test_a_deferred_first_flush_reads_no_file(vault: Workspace, reads: list[str]) -> None:
    t = vault.tracker()
    result = t.flush(defer=True)
    assert reads == []
    assert result.full and result.scanned == len(FILES) and not result.projects
    entries = list(t.store.index_iter())
    assert [e.path for e in entries] == sorted(FILES)
    assert not any(e.hashed for e in entries)
    # Names and inodes alone: the folder listing gives them, no file is lstat'ed.
    assert {(e.size, e.mtime_ns) for e in entries} == {(UNSTATED, UNSTATED)}
    assert [e.inode for e in entries] == [os.lstat(vault.root / e.path).st_ino for e in entries]
    assert paths(vault) == ["notes/a.md", "notes/b.md", "notes/d.txt", "notes/sub/c.md"]
    assert t.epoch("p") == 0
    assert t.store.meta_get(UNHASHED_META) == "1"


def test_a_file_written_just_before_the_listing_is_no_change(
    vault: Workspace, reads: list[str]
) -> None:
    vault.write("notes/new.md", "just written\n")  # racily clean, but before the listing
    t = vault.tracker()
    t.flush(defer=True)
    assert reads == []
    t.flush(defer=True)  # takes the stats; one too fresh to trust is read instead
    assert reads == ["notes/new.md"]
    entry = t.store.index_get("notes/new.md")
    assert entry is not None and entry.hashed and entry.mtime_ns == 0
    assert all(e.size != UNSTATED for e in t.store.index_iter())
    vault.tracker().flush()
    assert logged(vault) == []


def test_the_next_flush_reads_every_listed_file_and_logs_nothing(
    vault: Workspace, reads: list[str]
) -> None:
    vault.tracker().flush(defer=True)
    t = vault.tracker()
    result = t.flush()
    assert sorted(reads) == sorted(FILES)
    assert result.projects == {}
    assert t.epoch("p") == 0
    for e in t.store.index_iter():
        assert e.blob == blob_of(vault.root / e.path)
    assert t.store.meta_get(UNHASHED_META) == "0"
    reads.clear()
    assert vault.tracker().flush().projects == {} and reads == []  # read once, trusted after


@pytest.mark.parametrize("stated", [False, True])
def test_what_changed_between_listing_and_reading_is_told(
    vault: Workspace, stated: bool
) -> None:
    vault.tracker().flush(defer=True)
    if stated:  # a flush that may defer took each listed file's stat
        vault.tracker().flush(defer=True)
    root = vault.root
    age(vault.write("notes/a.md", "edited\n"), 30)
    (root / "notes/b.md").unlink()
    age(vault.write("notes/new.md", "new\n"))
    os.rename(root / "notes/sub/c.md", root / "notes/sub/moved.md")  # stat and all
    os.rename(root / "notes/d.txt", root / "notes/e.txt")
    age(vault.write("notes/e.txt", "moved and edited\n"), 30)
    vault.tracker().flush()
    # A file listed by name alone has no stat to be known by once it moved.
    moved = ([(R, "notes/sub/moved.md", "notes/sub/c.md")] if stated else
             [(C, "notes/sub/moved.md", None), (D, "notes/sub/c.md", None)])
    assert logged(vault) == sorted([
        (C, "notes/e.txt", None),  # its old bytes were never read: no rename to pair on
        (C, "notes/new.md", None),
        (D, "notes/b.md", None),
        (D, "notes/d.txt", None),
        (M, "notes/a.md", None),  # its mtime set back: the change time still tells
        *moved,
    ])


def test_a_listed_file_rewritten_with_its_own_bytes_reads_as_modified(vault: Workspace) -> None:
    vault.tracker().flush(defer=True)
    age(vault.write("notes/a.md", (vault.root / "notes/a.md").read_text()), 30)
    vault.tracker().flush()
    assert logged(vault) == [(M, "notes/a.md", None)]  # the listing never read its bytes


def test_a_deferred_flush_trusts_a_listed_stat_until_it_moves(
    vault: Workspace, reads: list[str]
) -> None:
    vault.tracker().flush(defer=True)
    age(vault.write("notes/a.md", "edited\n"), 30)
    t = vault.tracker()
    t.flush(defer=True)
    assert reads == ["notes/a.md"]
    assert logged(vault) == [(M, "notes/a.md", None)]
    assert [e.path for e in t.store.index_iter() if e.hashed] == ["notes/a.md"]
    assert t.store.meta_get(UNHASHED_META) == "1"  # the others are still to be read


def test_a_hinted_flush_that_may_not_defer_reads_the_listed_files_first(
    vault: Workspace, reads: list[str]
) -> None:
    from freshline.tracker.hints import Liveness

    vault.tracker().flush(defer=True)
    t = vault.tracker()
    alive = Liveness(t.store)  # a watcher holds its lock: a flush would scan the hints alone
    assert alive.hold()
    t.store.hints_add(["notes/a.md"])
    result = t.flush(sync=False)
    assert result.full and sorted(reads) == sorted(FILES)
    assert not any(not e.hashed for e in t.store.index_iter())


def test_a_hinted_flush_that_may_defer_takes_the_stat_of_an_untouched_file(
    vault: Workspace, reads: list[str]
) -> None:
    from freshline.tracker.hints import Liveness

    vault.tracker().flush(defer=True)
    t = vault.tracker()
    alive = Liveness(t.store)
    assert alive.hold()
    t.store.hints_add(["notes/a.md", "notes/b.md"])
    age(vault.write("notes/b.md", "edited\n"), 30)
    t.flush(sync=False, defer=True)
    assert logged(vault) == [(M, "notes/b.md", None)]  # a.md was hinted, never touched
    entry = t.store.index_get("notes/a.md")
    assert entry is not None and entry.size > 0 and not entry.hashed and reads == ["notes/b.md"]


def test_a_scope_on_tags_lists_nothing(ws: Workspace, reads: list[str]) -> None:
    for path, text in [("a.md", "#paper\n"), ("b.md", "no tag\n"), ("c.txt", "#paper\n")]:
        age(ws.write(path, text))
    ws.configure({"p": {"include": ["#paper"]}})
    t = ws.tracker()
    t.flush(defer=True)
    assert sorted(reads) == ["a.md", "b.md", "c.txt"]
    assert all(e.hashed and e.parsed for e in t.store.index_iter())
    assert paths(ws) == ["a.md"]


def test_a_tag_scope_after_a_listing_reads_and_parses_without_false_changes(
    vault: Workspace,
) -> None:
    vault.write("notes/b.md", "now a #paper\n")
    age(vault.root / "notes/b.md")
    vault.tracker().flush(defer=True)
    vault.configure({"p": {"include": ["#paper"]}})
    t = vault.tracker()
    changes = t.flush(defer=True).projects["p"].changes
    config = next(c for c in changes if c.kind is ChangeKind.CONFIG)
    assert config.detail is not None and config.detail["newly_included"] == []
    assert sorted((c.kind, c.path) for c in changes if c.path) == [
        (L, "notes/a.md"), (L, "notes/d.txt"), (L, "notes/sub/c.md")]
    assert paths(vault) == ["notes/b.md"]
    assert all(e.hashed for e in t.store.index_iter())


def test_a_listed_file_that_cannot_be_read_leaves_the_index(
    vault: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root reads any file whatever its mode: the refusal is injected where the scanner reads.
    vault.tracker().flush(defer=True)
    real = scan_module.blob_id_file

    def refusing(path: str, size: int) -> tuple[str, bytes]:
        if os.fsdecode(path).endswith("notes/a.md"):
            raise PermissionError(13, "Permission denied")
        return real(path, size)

    monkeypatch.setattr(scan_module, "blob_id_file", refusing)
    t = vault.tracker()
    result = t.flush()
    assert result.warnings == ["notes/a.md: cannot read (Permission denied)"]
    assert result.projects == {}  # as a first full scan leaves a file it cannot read
    assert t.store.index_get("notes/a.md") is None
    assert t.store.meta_get(UNHASHED_META) == "0"
    monkeypatch.setattr(scan_module, "blob_id_file", real)
    vault.tracker().flush()
    assert logged(vault) == [(C, "notes/a.md", None)]


@pytest.mark.parametrize("delay", [0.0, 0.4, 1.5])
def test_a_reader_killed_at_any_point_loses_nothing(vault: Workspace, delay: float) -> None:
    for i in range(300):
        age(vault.write(f"notes/bulk/{i}.md", f"bulk {i}\n" * 50))
    vault.tracker().flush(defer=True)
    reader = subprocess.Popen(
        [sys.executable, "-m", "freshline", "--workspace", str(vault.root), "scan"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)
    reader.send_signal(signal.SIGKILL)
    reader.wait()
    age(vault.write("notes/a.md", "edited after the kill\n"), 30)
    t = vault.tracker()
    t.flush()
    assert logged(vault) == [(M, "notes/a.md", None)]
    assert all(e.blob == blob_of(vault.root / e.path) for e in t.store.index_iter())


def test_the_first_hook_call_lists_and_the_service_it_starts_reads(vault: Workspace) -> None:
    """The first prompt of a Claude session in a fresh workspace, as Claude Code runs the
    hook: the manifest names every file, the index holds them unread, and the service the
    hook starts reads them all without logging a change."""
    import json

    root = vault.root
    prompt = json.dumps({"session_id": "s1", "cwd": str(root / "notes"), "prompt": "hi",
                         "hook_event_name": "UserPromptSubmit"})
    command = [sys.executable, "-m", "freshline", "--workspace", str(root), "hook", "claude-code"]
    env = {**os.environ, "FRESHLINE_AUTOWATCH": "1"}
    try:
        first = subprocess.run(command, input=prompt, capture_output=True, text=True, env=env,
                               timeout=60, check=True).stdout
        context = json.loads(first)["hookSpecificOutput"]["additionalContext"]
        assert all(f"{root}/{p}" in context for p in FILES if p.startswith("notes/"))
        store = Store(root / ".freshline")
        wait_for(lambda: store.meta_get(UNHASHED_META) == "0", "the watcher to read the files")
        assert all(e.blob == blob_of(root / e.path) for e in store.index_iter())
        assert store.project_state("p") is not None and store.project_state("p").epoch == 0
        again = subprocess.run(command, input=prompt, capture_output=True, text=True, env=env,
                               timeout=60, check=True).stdout
        assert again == ""  # nothing changed, nothing told
    finally:
        assert autostart.stop()


def test_a_document_listed_but_not_read_is_probed_on_its_bytes(ws: Workspace) -> None:
    """Snapshots kept from an index that is gone: the listing holds no blob to compare
    them with, so the probe reads the document itself (and only then)."""
    from freshline.context import Channel, manifest_from_json, render_manifest
    from freshline.session import SessionManager

    from .docgen import write_pdf

    write_pdf(ws.root / "notes/paper.pdf", [["A paper"]])
    ws.write("notes/broken.pdf", b"%PDF-1.4\nnot really a pdf\n%%EOF\n")
    for path in ("notes/paper.pdf", "notes/broken.pdf"):
        age(ws.root / path)
    config = ws.configure({"p": {"include": ["notes"]}})
    m = SessionManager(config)
    try:
        m.materialize("p")
    finally:
        m.close()
    for db in (ws.root / ".freshline").glob("freshline.db*"):
        db.unlink()  # a fresh index; the snapshot and the failure marker stay
    m = SessionManager(ws.config())
    try:
        s = m.new("p", mode="live", convert=False, channel=Channel.HOOK)
        entry = m.store.index_get("notes/paper.pdf")
        assert entry is not None and not entry.hashed
        block = render_manifest(manifest_from_json(s.manifest))
    finally:
        m.close()
    snapshot = m.materializer.store.snapshot_path("notes/paper.pdf")
    assert f"- {ws.root}/notes/paper.pdf → {snapshot}" in block
    assert f"- {ws.root}/notes/broken.pdf (conversion failed" in block
    assert "older snapshot" not in block and "still converting" not in block


def test_a_long_lived_manager_lists_the_blobs_once_read(vault: Workspace) -> None:
    """An ACP proxy's manager opens its session from a listing; its in-scope listing must
    not keep the unread entries once a flush has read them."""
    from freshline.context import Channel
    from freshline.session import SessionManager

    m = SessionManager(vault.config())
    try:
        m.new("p", mode="live", convert=False, channel=Channel.ACP)
        assert not any(e.hashed for e in m.in_scope.entries("p"))
        m.tracker.flush()
        entries = m.in_scope.entries("p")
    finally:
        m.close()
    assert [e.path for e in entries] == ["notes/a.md", "notes/b.md", "notes/d.txt",
                                         "notes/sub/c.md"]
    assert all(e.blob == blob_of(vault.root / e.path) for e in entries)


# --- the pure part ------------------------------------------------------------------------


def entry(path: str, blob: str = UNHASHED, inode: int = 1, mtime: int = 10**18,
          size: int = 5, kind: FileKind = FileKind.FILE) -> IndexEntry:
    return IndexEntry(path, kind, size, mtime, inode, 7, blob)


@pytest.mark.parametrize(
    ("old", "new", "paired"),
    [
        (entry("a"), entry("b", "f" * 40), True),  # moved: inode, size, mtime kept
        (entry("a"), entry("b", "f" * 40, mtime=10**18 + 1), False),  # then edited
        (entry("a"), entry("b", "f" * 40, inode=2), False),  # another file
        (entry("a"), entry("b", "f" * 40, size=6), False),
        (entry("a"), entry("b", "f" * 40, kind=FileKind.LINK), False),
        (entry("a", "e" * 40), entry("b", "f" * 40), False),  # read already: its own blob
        (entry("a"), entry("b"), False),  # nothing read on either side
    ],
)
def test_a_listed_file_takes_the_blob_of_its_stat_twin(
    old: IndexEntry, new: IndexEntry, paired: bool
) -> None:
    out = twin_blobs({"a": old}, {"b": new})
    assert out["a"].blob == (new.blob if paired else old.blob)


stats = st.builds(
    entry, path=st.sampled_from(["a", "b", "c", "d"]), inode=st.integers(1, 3),
    mtime=st.integers(1, 3), blob=st.sampled_from([UNHASHED, "e" * 40, "f" * 40]),
)


@given(st.lists(stats, max_size=4), st.lists(stats, max_size=4))
def test_twin_blobs_only_fills_listed_entries_from_identical_stats(
    gone: list[IndexEntry], new: list[IndexEntry]
) -> None:
    deleted = {e.path: e for e in gone}
    created = {f"new/{e.path}": e for e in new}
    out = twin_blobs(deleted, created)
    assert out.keys() == deleted.keys()
    for path, before in deleted.items():
        after = out[path]
        assert (after.path, stat_key(after), after.kind) == (
            before.path, stat_key(before), before.kind)
        if after.blob != before.blob:
            assert not before.hashed
            assert any(stat_key(c) == stat_key(before) and c.blob == after.blob
                       for c in created.values())


def test_a_listed_entry_is_its_lstat(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("echo\n")
    (tmp_path / "run.sh").chmod(0o755)
    st_ = os.lstat(tmp_path / "run.sh")
    e = listed_entry("bin/run.sh", st_)
    assert (e.size, e.mtime_ns, e.inode, e.dev, e.mode) == (
        st_.st_size, st_.st_mtime_ns, st_.st_ino, st_.st_dev, 0o100755)
    assert not e.hashed and e.parsed  # a shell script has no tags to read
    assert not listed_entry("n.md", st_).parsed


# --- the tracker machine, from a listing -------------------------------------------------


class ListingMachine(TrackerMachine):
    """The tracker's state machine from a first flush that only listed its files, with
    flushes that may defer beside those that may not."""

    def __init__(self) -> None:
        super().__init__()  # an empty workspace, flushed: every file below is created
        self._unread: dict[int, set[str]] = {}
        for i, name in enumerate(NAMES[:4]):
            age(self.ws.write(name, BODIES[i]), 2000 - i)
        self.truth = self.on_disk()
        self.tracker.flush(defer=True)
        self.readers[self.tracker.epoch("p")] = self.truth

    @rule()
    def deferred_flush(self) -> None:
        self.truth = self.on_disk()
        self.tracker.flush(defer=True)
        self.readers[self.tracker.epoch("p")] = self.truth
        listed = {e.path: e for e in self.tracker.files_in_scope("p")}
        assert sorted(listed) == sorted(self.truth)
        assert all(e.blob == self.truth[p] for p, e in listed.items() if e.hashed)

    def unread(self, epoch: int) -> frozenset[str]:
        """Files holding content that was listed, not read, at any check since the reader
        at `epoch` was taken (a rename carries it along): a change over one (left, then
        entered) may be told as modified though its content came back, since the tracker
        never knew that content."""
        blobs = self._unread.setdefault(epoch, set())
        blobs |= {self.truth.get(e.path, "") for e in self.tracker.store.index_iter()
                  if not e.hashed}
        return frozenset(p for p, blob in self.truth.items() if blob in blobs)


def test_listing_state_machine(backend: StoreBackend) -> None:
    run_state_machine_as_test(
        type("OnBackend", (ListingMachine,), {"backend": backend}),
        settings=settings(max_examples=15 if backend.server is None else 6,
                          stateful_step_count=20, deadline=None),
    )
