"""The watcher in-process, on inotify: flushes see writes at once, one batch's error never
stops it, hints the store refuses make readers scan, lost events mean a full look, it
follows the config and the checkout's refs, and it sleeps while nothing happens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from freshline.config import Config
from freshline.errors import FreshlineError, StoreError
from freshline.store.records import ChangeKind
from freshline.tracker import FlushResult, hints, watchwork
from freshline.tracker.hints import watcher_alive
from freshline.tracker.inotify import Q_OVERFLOW, Event
from freshline.tracker.notifier import InotifyNotifier
from freshline.tracker.watcher import Watcher

from .conftest import Workspace, git, wait_for

FRESHLINE = [sys.executable, "-m", "freshline"]


@contextmanager
def running(watcher: Watcher) -> Iterator[Watcher]:
    """`watcher` watching until the block ends (on a notifier of its own), up and
    trusted; it must stop when asked."""
    watcher.start()
    try:
        wait_for(lambda: watcher.up.is_set() and watcher_alive(watcher.tracker.store),
                 "the watcher's first full scan")
        yield watcher
    finally:
        watcher.close()
    assert not watcher_alive(watcher.tracker.store)


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("n/start.md", "start")
    ws.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    return ws


def failing(times: int, real: Callable[..., Any], error: Exception) -> Callable[..., Any]:
    """`real`, except that its first `times` calls raise `error` (a disk that fills up
    and is freed again: nothing here can fill a real one cheaply)."""
    left = [times]

    def call(*args: Any, **kwargs: Any) -> Any:
        if left[0]:
            left[0] -= 1
            raise error
        return real(*args, **kwargs)

    return call


def logged(ws: Workspace, path: str) -> bool:
    return any(e.change.path == path for e in ws.tracker().store.log_read("p", 0))


def paths_of(result: FlushResult) -> list[str]:
    return sorted(c.path for d in result.projects.values() for c in d.changes)


@pytest.mark.parametrize("notifier", ["inotify", "watchfiles"])
def test_a_flush_sees_writes_at_once_while_the_watcher_runs(
    notes: Workspace, notifier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On inotify, and on the portable notifier (watchfiles) where the kernel has none."""
    monkeypatch.setenv("FRESHLINE_NOTIFIER", notifier)
    with running(watcher := Watcher(notes.config())):
        assert watcher.periodic is (notifier == "watchfiles")  # it may lose events unsaid
        tracker = notes.tracker()
        tracker.flush()
        before = tracker.epoch("p")
        notes.write("n/new.md", "hello")
        notes.write("n/start.md", "changed")
        notes.write("n/deep/er/down.md", "in folders made a moment ago")
        result = tracker.flush()  # no sleep: the cookie makes the watcher catch up first
        assert not result.full
        changes = tracker.changes_since("p", before).changes
        assert {(c.kind, c.path) for c in changes} == {
            (ChangeKind.CREATED, "n/new.md"), (ChangeKind.MODIFIED, "n/start.md"),
            (ChangeKind.CREATED, "n/deep/er/down.md")}


def test_a_flush_in_the_watchers_own_process_needs_no_cookie_file(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the service, a question's flush syncs with the watcher in memory: the kernel's
    queue read dry, its hints stored, no file written and waited for."""
    def no_cookie(*_args: Any) -> bool:
        raise AssertionError("a cookie file was dropped")

    with running(Watcher(notes.config())):
        monkeypatch.setattr(hints, "cookie_sync", no_cookie)
        tracker = notes.tracker()
        tracker.flush()
        notes.write("n/new.md", "written a moment ago")
        result = tracker.flush()
        assert not result.full and paths_of(result) == ["n/new.md"]


def test_a_folder_moved_in_the_workspace_is_watched_where_it_lands(notes: Workspace) -> None:
    notes.write("n/box/inside.md", "in a box")
    with running(Watcher(notes.config())):
        tracker = notes.tracker()
        tracker.flush()
        os.rename(notes.root / "n/box", notes.root / "n/moved")
        tracker.flush()
        notes.write("n/moved/later.md", "written in the moved folder")
        result = tracker.flush()
        assert not result.full and paths_of(result) == ["n/moved/later.md"]


def test_a_name_that_is_not_utf8_is_hinted_like_any_other(notes: Workspace) -> None:
    """watchfiles gave up on such a name, losing its batch (a full scan each time)."""
    with running(Watcher(notes.config())):
        reader = notes.tracker()
        reader.flush()
        with open(os.fsencode(str(notes.root)) + b"/n/caf\xe9.md", "wb") as f:
            f.write(b"latin-1 name")
        result = reader.flush()
        assert not result.full and paths_of(result) == [os.fsdecode(b"n/caf\xe9.md")]


def test_with_the_watcher_gone_a_flush_still_finds_changes(notes: Workspace) -> None:
    watcher = Watcher(notes.config())
    with running(watcher):
        tracker = notes.tracker()
        tracker.flush()
    notes.write("n/after.md", "written while nobody watched")
    result = tracker.flush()
    assert result.full and paths_of(result) == ["n/after.md"]


def test_lost_events_make_the_next_flush_look_at_everything(notes: Workspace) -> None:
    """The kernel's queue overflowed (its events are lost, and inotify says so): every
    reader's flush looks at the whole workspace, and the folders made meanwhile are
    watched too."""
    notifier = InotifyNotifier()
    watcher = Watcher(notes.config(), notifier)
    try:
        with running(watcher):
            tracker = notes.tracker()
            tracker.flush()
            before = tracker.epoch("p")
            notifier.unsubscribe(watcher)  # the events of what follows go unseen
            notes.write("n/unseen.md", "while the queue overflowed")
            notes.write("n/newdir/inside.md", "in a folder made meanwhile")
            notifier.subscribe(watcher)
            with notifier._lock:  # as the notifier's thread meets the kernel's overflow
                heard = notifier._dispatch([Event(-1, Q_OVERFLOW, 0, b"")])
            assert heard == {}
            tracker.flush()  # (the watcher's own full scan may log them first)
            logged = tracker.changes_since("p", before).changes
            assert sorted(c.path for c in logged) == ["n/newdir/inside.md", "n/unseen.md"]
            before = tracker.epoch("p")
            notes.write("n/newdir/later.md", "the new folder is watched")
            tracker.flush()
            assert [c.path for c in tracker.changes_since("p", before).changes] == [
                "n/newdir/later.md"]
    finally:
        notifier.close()


def _switches(thread: threading.Thread) -> int:
    """How many times a thread went to sleep and was woken (voluntary context switches)."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("voluntary_ctxt_switches")))


def test_an_idle_watcher_sleeps_until_something_happens(notes: Workspace) -> None:
    """watchfiles' loop woke every 5 ms and a heartbeat every second: idle, the watcher's
    threads now wake for nothing, and its worker waits with no timeout."""
    watcher = Watcher(notes.config(), notifier := InotifyNotifier())
    try:
        with running(watcher):
            threads = [notifier._thread, watcher._taking, watcher._worker._thread]
            wait_for(lambda: watcher._worker._due() is None, "nothing timed")
            before = [_switches(t) for t in threads]
            threading.Event().wait(0.3)
            assert [_switches(t) for t in threads] == before
            notes.write("n/woken.md", "an event wakes it")
            assert paths_of(notes.tracker().flush()) == ["n/woken.md"]
    finally:
        notifier.close()


def test_two_processes_flushing_at_once_log_each_change_once(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["n"]}})
    ws.tracker().scan()
    for i in range(300):
        ws.write(f"n/{i}.md", f"note {i}")
    procs = [subprocess.Popen([*FRESHLINE, "--workspace", str(ws.root), "scan", "--json"],
                              stdout=subprocess.PIPE) for _ in range(3)]
    outputs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    logged_paths = sorted(c.change.path for c in ws.tracker().store.log_read("p", 0))
    assert logged_paths == sorted(f"n/{i}.md" for i in range(300))
    epochs = [o["projects"]["p"]["epoch"] for o in outputs if "p" in o["projects"]]
    assert epochs == [1]


def test_a_watcher_busy_in_a_long_conversion_still_answers_cookies(notes: Workspace) -> None:
    busy, release = threading.Event(), threading.Event()

    def convert(_result: FlushResult) -> None:  # a conversion that takes its time
        busy.set()
        release.wait(30)

    watcher = Watcher(notes.config(), on_flush=convert)
    try:
        with running(watcher):
            reader = notes.tracker()
            notes.write("n/new.md", "a document to convert")
            wait_for(busy.is_set)
            notes.write("n/later.md", "written while the watcher works")
            result = reader.flush()  # the cookie is answered while the worker is busy
            assert not result.full and "n/later.md" in paths_of(result)
            release.set()
    finally:
        release.set()


def test_a_tree_that_cannot_be_watched_stops_the_watcher_with_one_line(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room(self: Any, path: bytes, mask: int = 0) -> int:
        raise OSError(28, "No space left on device")  # as inotify says at the watch limit

    monkeypatch.setattr("freshline.tracker.inotify.Inotify.add", no_room)
    watcher = Watcher(notes.config())
    with pytest.raises(FreshlineError) as info:
        watcher.run()
    assert str(info.value) == (f"cannot watch {notes.root.resolve()}: No space left on "
                               "device; flushes scan the whole workspace instead")
    assert not watcher_alive(notes.tracker().store)


def test_a_flush_that_keeps_failing_is_reported_once_and_retried_by_full_scans(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchwork, "RETRY_FIRST_S", 0.05)
    errors: list[Exception] = []
    watcher = Watcher(notes.config(), on_flush=lambda _r: None, on_error=errors.append)
    with running(watcher):
        disk_full = OSError(28, "No space left on device")
        tracker = watcher.tracker
        monkeypatch.setattr(tracker, "flush", failing(1, tracker.flush, disk_full))
        monkeypatch.setattr(tracker, "scan", failing(3, tracker.scan, disk_full))
        notes.write("n/new.md", "written while the disk is full")
        wait_for(lambda: logged(notes, "n/new.md"), "the batch logged by a full scan")
        assert errors == [disk_full]  # four failures in a row, one report
        notes.write("n/later.md", "the watcher goes on")
        wait_for(lambda: logged(notes, "n/later.md"), "the next batch")


def test_a_listener_that_raises_is_reported_and_watching_goes_on(notes: Workspace) -> None:
    errors: list[Exception] = []
    heard: list[str] = []

    def convert(result: Any) -> None:
        heard.extend(c.path for d in result.projects.values() for c in d.changes)
        if len(heard) == 1:
            raise KeyError("unknown project 'pc'")

    with running(Watcher(notes.config(), on_flush=convert, on_error=errors.append)):
        notes.write("n/one.md", "1")
        wait_for(lambda: errors, "the listener's error")
        notes.write("n/two.md", "2")
        wait_for(lambda: "n/two.md" in heard, "the next batch heard")
    assert [str(e) for e in errors] == ['"unknown project \'pc\'"']


def test_hints_the_store_refuses_make_readers_scan_until_a_full_scan_covers_them(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = notes.tracker()
    alive_when_told: list[bool] = []
    watcher = Watcher(notes.config(), on_flush=lambda _r: None,
                      on_error=lambda _e: alive_when_told.append(watcher_alive(reader.store)))
    with running(watcher):
        store = watcher.tracker.store
        monkeypatch.setattr(store, "hints_add",
                            failing(1, store.hints_add, StoreError("database is locked")))
        monkeypatch.setattr(watchwork, "RETRY_FIRST_S", 0.05)
        notes.write("n/lost.md", "its hint is lost")
        wait_for(lambda: alive_when_told, "the refusal reported")
        assert alive_when_told == [False]  # readers were already scanning for themselves
        notes.write("n/next.md", "the next batch brings the full scan")
        wait_for(lambda: watcher_alive(reader.store), "trusted again after a full scan")
        assert logged(notes, "n/lost.md")
        notes.write("n/after.md", "after")
        assert not reader.flush().full


def test_an_edit_of_the_config_alone_reaches_the_watcher(notes: Workspace) -> None:
    configs: list[Config] = []
    with running(Watcher(notes.config(), on_flush=lambda _r: None, on_config=configs.append)):
        wait_for(lambda: configs, "the config at start")
        notes.configure({"p": {"include": ["n"]}, "q": {"include": ["n"]}}, debounce_ms=50)
        wait_for(lambda: "q" in configs[-1].projects, "the new config")
        assert notes.tracker().store.project_state("q") is not None


def test_a_watcher_whose_folder_is_deleted_stops(tmp_path: Path) -> None:
    root = tmp_path / "gone"
    root.mkdir()
    (root / "n").mkdir()
    ws = Workspace(root)
    ws.configure({"p": {"include": ["n"]}})
    watcher = Watcher(ws.config())
    watcher.start()
    try:
        wait_for(watcher.up.is_set, "the watcher up")
        subprocess.run(["rm", "-rf", str(root)], check=True)
        assert watcher.wait(30), "the watcher stopped"
        assert watcher.vanished()
    finally:
        watcher.close()
    assert not root.exists()  # nothing made it again


@pytest.fixture
def repo(notes: Workspace) -> Workspace:
    git(notes.root, "init", "--quiet", "--initial-branch=main")
    git(notes.root, "add", "-A")
    git(notes.root, "commit", "--quiet", "-m", "start")
    return notes


def test_a_commit_is_logged_as_it_happens_and_the_refs_listener_hears_it(
    repo: Workspace,
) -> None:
    moved = threading.Event()
    with running(Watcher(repo.config(), on_flush=lambda _r: None, on_refs=moved.set)):
        reader = repo.tracker()
        repo.write("n/start.md", "edited, then committed")
        reader.flush()
        moved.clear()
        before = reader.epoch("p")
        git(repo.root, "commit", "--quiet", "-am", "only the refs move")
        wait_for(moved.is_set, "the refs listener")
        wait_for(lambda: any(c.kind is ChangeKind.GIT for c in
                             reader.changes_since("p", before).changes), "the commit logged")


def test_a_linked_worktree_watches_the_refs_where_they_live(tmp_path: Path) -> None:
    from freshline.tracker.watchpaths import Seen, event_paths

    main = tmp_path / "main"
    main.mkdir()
    (main / "a.md").write_text("a")
    git(main, "init", "--quiet", "--initial-branch=main")
    git(main, "add", "-A")
    git(main, "commit", "--quiet", "-m", "start")
    git(main, "worktree", "add", "--quiet", str(tmp_path / "side"), "-b", "side")
    cookies = tmp_path / "side" / ".freshline" / "cookies"
    paths = event_paths(tmp_path / "side", cookies)
    common = str(main / ".git")
    assert paths.tops() == (str(tmp_path / "side"), str(cookies),
                            *sorted([common, f"{common}/worktrees/side"]))
    assert paths.sort(f"{common}/worktrees/side/HEAD")[0] is Seen.REF
    assert paths.sort(f"{common}/refs/heads/side")[0] is Seen.REF
    assert paths.sort(f"{common}/HEAD")[0] is Seen.NOTHING  # the main checkout's
    assert paths.wants(f"{common}/refs/heads") and paths.wants(f"{common}/refs/heads/x")
    assert not paths.wants(f"{common}/objects") and not paths.wants(f"{common}/refs/freshline")
    assert not paths.wants(f"{common}/worktrees/side/logs")
