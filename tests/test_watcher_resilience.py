"""The watcher in-process: one batch's error never stops it, hints the store refuses make
readers scan, it comes up however busy its data folder is, and it follows the config and
the checkout's refs as they change."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from freshline.config import Config
from freshline.errors import StoreError
from freshline.interfaces.mcp.events import Announcer, Changed
from freshline.store.records import ChangeKind
from freshline.tracker import watchwork
from freshline.tracker.hints import watcher_alive
from freshline.tracker.watcher import Watcher

from .conftest import Workspace, git, wait_for


@contextmanager
def running(watcher: Watcher) -> Iterator[Watcher]:
    """`watcher` in a thread until the block ends; it must stop when asked."""
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        wait_for(lambda: watcher_alive(watcher.tracker.store), "the watcher's heartbeat")
        yield watcher
    finally:
        watcher.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


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
        notes.write("n/lost.md", "its hint is lost")
        wait_for(lambda: alive_when_told, "the refusal reported")
        assert alive_when_told == [False]  # readers were already scanning for themselves
        wait_for(lambda: watcher_alive(reader.store), "trusted again after a full scan")
        assert logged(notes, "n/lost.md")
        notes.write("n/next.md", "next")
        assert not reader.flush().full


def test_the_watcher_comes_up_however_busy_its_data_folder_is(notes: Workspace) -> None:
    """Issue 29, item 4: clients opening the store make events in `.freshline/` that the
    watcher filters out; while they came every 0.5 s the watcher never started its scan."""
    busy = threading.Event()

    def clients() -> None:  # as opening and closing the store does (its -wal, -shm files)
        noise = notes.root / ".freshline" / "client.tmp"
        while not busy.wait(0.1):
            noise.write_bytes(b"x")
            noise.unlink()

    thread = threading.Thread(target=clients)
    thread.start()
    try:
        with running(Watcher(notes.config())):
            pass
    finally:
        busy.set()
        thread.join()


def test_an_edit_of_the_config_alone_reaches_the_watcher(notes: Workspace) -> None:
    configs: list[Config] = []
    with running(Watcher(notes.config(), on_flush=lambda _r: None, on_config=configs.append)):
        wait_for(lambda: configs, "the config at start")
        notes.configure({"p": {"include": ["n"]}, "q": {"include": ["n"]}}, debounce_ms=50)
        wait_for(lambda: "q" in configs[-1].projects, "the new config")
        assert notes.tracker().store.project_state("q") is not None


@pytest.fixture
def repo(notes: Workspace) -> Workspace:
    git(notes.root, "init", "--quiet", "--initial-branch=main")
    git(notes.root, "add", "-A")
    git(notes.root, "commit", "--quiet", "-m", "start")
    return notes


def commit(ws: Workspace, path: str, text: str) -> None:
    """Commit a change to `path` that the index already has (no file event is left to
    tell the commit: only the refs move)."""
    ws.write(path, text)
    ws.tracker().flush()
    git(ws.root, "commit", "--quiet", "-am", f"edit {path}")


def test_a_commit_is_logged_as_it_happens_and_the_refs_listener_hears_it(
    repo: Workspace,
) -> None:
    moved = threading.Event()
    with running(Watcher(repo.config(), on_flush=lambda _r: None, on_refs=moved.set)):
        reader = repo.tracker()
        reader.flush()
        moved.clear()
        before = reader.epoch("p")
        commit(repo, "n/start.md", "edited, then committed")
        wait_for(moved.is_set, "the refs listener")
        wait_for(lambda: any(c.kind is ChangeKind.GIT for c in
                             reader.changes_since("p", before).changes), "the commit logged")


def test_the_mcp_announcer_tells_a_commit(repo: Workspace) -> None:
    heard: list[Changed] = []
    announcer = Announcer(repo.config(), heard.append)
    announcer.start()
    try:
        wait_for(lambda: watcher_alive(announcer.watcher.tracker.store), "the watcher")
        repo.write("n/start.md", "edited, to be committed")
        wait_for(lambda: any("p" in c.updated for c in heard), "the edit announced")
        quiet_for(heard, 2.5)
        heard.clear()
        git(repo.root, "commit", "--quiet", "-am", "only the refs move")
        wait_for(lambda: any("p" in c.updated for c in heard), "the commit announced")
    finally:
        announcer.stop()


def test_the_servers_of_a_workspace_run_one_watcher(notes: Workspace) -> None:
    """Seen (issue 30, load): each `serve` process ran a watcher of its own on the shared
    workspace, so every hint was stored twice and every batch flushed twice, all under
    the store's one write lock. Now one server watches; when it stops, another takes
    over, and every server still announces what the watcher logged."""
    heard: list[Changed] = []
    first = Announcer(notes.config(), heard.append)
    second = Announcer(notes.config(), heard.append)
    first.start()
    second.start()
    try:
        watching = [t for t in threading.enumerate() if t.name == "freshline-mcp-watch"]
        assert len(watching) == 1 and first.watching and not second.watching
        wait_for(lambda: watcher_alive(first.watcher.tracker.store), "the watcher")
        first.stop()
        wait_for(lambda: second.watching, "the other server taking over", timeout=10)
        wait_for(lambda: watcher_alive(second.watcher.tracker.store), "its watcher")
        heard.clear()
        notes.write("n/start.md", "edited after the take-over")
        wait_for(lambda: any("p" in c.updated for c in heard), "the edit announced")
    finally:
        first.stop()
        second.stop()


def quiet_for(heard: list[Changed], seconds: float) -> None:
    """Wait until nothing was heard for `seconds` (the announcer looks every second)."""
    seen = -1
    while seen != len(heard):
        seen = len(heard)
        time.sleep(seconds)


def test_a_linked_worktree_watches_the_refs_where_they_live(tmp_path: Path) -> None:
    from freshline.tracker.watchpaths import Seen, event_paths

    main = tmp_path / "main"
    main.mkdir()
    (main / "a.md").write_text("a")
    git(main, "init", "--quiet", "--initial-branch=main")
    git(main, "add", "-A")
    git(main, "commit", "--quiet", "-m", "start")
    git(main, "worktree", "add", "--quiet", str(tmp_path / "side"), "-b", "side")
    paths = event_paths(tmp_path / "side", tmp_path / "side" / ".freshline" / "cookies")
    common = str(main / ".git")
    assert paths.outside() == sorted([common, f"{common}/worktrees/side"])
    assert paths.sort(f"{common}/worktrees/side/HEAD")[0] is Seen.REF
    assert paths.sort(f"{common}/refs/heads/side")[0] is Seen.REF
    assert paths.sort(f"{common}/HEAD")[0] is Seen.NOTHING  # the main checkout's
