"""The watcher's pure parts: what an event path is about, how a watcher is shown, durations;
and what `scan` reports (its marks move by compare-and-set)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces.cli.watchers import (
    listing_data,
    listing_lines,
    watcher_data,
    watcher_line,
)
from freshline.interfaces.text import duration
from freshline.tracker.registry import WatcherRecord, WatcherState
from freshline.tracker.reports import mark_key, take_news
from freshline.tracker.watchpaths import EventPaths, Seen

from .conftest import Workspace

ROOT = "/w"
PATHS = EventPaths(ROOT, f"{ROOT}/.freshline/cookies", f"{ROOT}/.git", f"{ROOT}/.git")


@pytest.mark.parametrize(
    ("path", "seen", "rel"),
    [
        ("/w/notes/a.md", Seen.HINT, "notes/a.md"),
        ("/w", Seen.HINT, ""),
        ("/w/.freshline/cookies/abc", Seen.COOKIE, "/w/.freshline/cookies/abc"),
        ("/w/.freshline/cookies/start-1f", Seen.COOKIE, "/w/.freshline/cookies/start-1f"),
        ("/w/.freshline/freshline.db-wal", Seen.NOTHING, ".freshline/freshline.db-wal"),
        ("/w/.freshline/watcher.heartbeat", Seen.NOTHING, ".freshline/watcher.heartbeat"),
        ("/w/.git/HEAD", Seen.REF, "/w/.git/HEAD"),
        ("/w/.git/refs/heads/main", Seen.REF, "/w/.git/refs/heads/main"),
        ("/w/.git/refs/heads/team/topic", Seen.REF, "/w/.git/refs/heads/team/topic"),
        ("/w/.git/refs/remotes/origin/main", Seen.REF, "/w/.git/refs/remotes/origin/main"),
        ("/w/.git/packed-refs", Seen.REF, "/w/.git/packed-refs"),
        ("/w/.git/refs/freshline/conversations/s1", Seen.NOTHING,
         ".git/refs/freshline/conversations/s1"),  # every turn moves these
        ("/w/.git/refs/heads/main.lock", Seen.REF, "/w/.git/refs/heads/main.lock"),
        ("/w/.git/index", Seen.NOTHING, ".git/index"),
        ("/w/.git/objects/ab/cdef", Seen.NOTHING, ".git/objects/ab/cdef"),
        ("/w/.git/logs/refs/heads/main", Seen.NOTHING, ".git/logs/refs/heads/main"),
        ("/w/.git/info/exclude", Seen.CONFIG, ".git/info/exclude"),
        ("/w/freshline.toml", Seen.CONFIG, "freshline.toml"),
        ("/w/sub/freshline.toml", Seen.NOTHING, "sub/freshline.toml"),  # a nested workspace's
        ("/w/sub/.git/HEAD", Seen.NOTHING, "sub/.git/HEAD"),  # a nested repository's
        ("/elsewhere/x.md", Seen.NOTHING, "../elsewhere/x.md"),
    ],
)
def test_what_an_event_path_is_about(path: str, seen: Seen, rel: str) -> None:
    assert PATHS.sort(path) == (seen, rel)


def test_ignored_paths_are_nothing_and_a_workspace_without_git_has_no_refs() -> None:
    assert PATHS.sort("/w/node_modules/x.js", ("node_modules",))[0] is Seen.NOTHING
    plain = EventPaths(ROOT, f"{ROOT}/.freshline/cookies")
    assert plain.sort("/w/.git/HEAD")[0] is Seen.NOTHING
    assert plain.outside() == [] and PATHS.outside() == []


_NAME = st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1,
                max_size=8).filter(lambda n: n not in (".", ".."))


@given(st.lists(_NAME, min_size=1, max_size=4))
def test_a_path_in_the_workspace_is_a_hint_unless_internal(parts: list[str]) -> None:
    rel = "/".join(parts)
    seen, got = PATHS.sort(f"{ROOT}/{rel}")
    if parts[0] in (".git", ".freshline") or ".git" in parts or ".freshline" in parts:
        assert seen in (Seen.NOTHING, Seen.REF, Seen.COOKIE, Seen.CONFIG)
    elif parts[-1] == "freshline.toml":
        assert seen is (Seen.CONFIG if len(parts) == 1 else Seen.NOTHING)
    else:
        assert (seen, got) == (Seen.HINT, rel)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0, "0 s"), (-3, "0 s"), (59.9, "59 s"), (60, "1 min"), (61, "1 min"), (3599, "59 min"),
     (3600, "1 h"), (3725, "1 h 2 min"), (86_400, "1 d"), (90_061, "1 d 1 h"),
     (172_800 + 59, "2 d")],
)
def test_duration(seconds: float, said: str) -> None:
    assert duration(seconds) == said


@given(st.floats(min_value=0, max_value=10**8, allow_nan=False))
def test_duration_says_at_most_two_units_largest_first(seconds: float) -> None:
    words = duration(seconds).split()
    units = words[1::2]
    assert 1 <= len(units) <= 2
    order = ["d", "h", "min", "s"]
    assert [order.index(u) for u in units] == sorted(order.index(u) for u in units)
    assert all(int(n) > 0 for n in words[::2]) or words == ["0", "s"]


RECORD = WatcherRecord("/w", 4242, 1000.0, "/w/.freshline/freshline.db")


@pytest.mark.parametrize(
    ("state", "record", "pid", "line"),
    [
        (WatcherState.RUNNING, RECORD, 4242, "watcher: running (pid 4242, up 5 min)"),
        (WatcherState.RUNNING, RECORD.__class__(**{**RECORD.__dict__, "last_error": "oops"}),
         4242, "watcher: running (pid 4242, up 5 min); last error: oops"),
        (WatcherState.RUNNING, RECORD.__class__(**{**RECORD.__dict__, "store": "pg://x/db"}),
         4242, "watcher: running (pid 4242, up 5 min, writing to pg://x/db)"),
        (WatcherState.STARTING, None, 4243, "watcher: starting (pid 4243)"),
        (WatcherState.STARTING, RECORD, 4242, "watcher: starting (pid 4242, up 5 min)"),
        (WatcherState.STOPPED, None, None, "watcher: not running"),
        (WatcherState.STOPPED, RECORD.__class__(**{**RECORD.__dict__, "stopped": "cannot watch"}),
         None, "watcher: not running; it had stopped: cannot watch"),
        (WatcherState.STOPPED, RECORD, None, "watcher: not running; it had stopped: it ended "
         "without a word (killed, or the machine restarted)"),
    ],
)
def test_the_watcher_line(
    state: WatcherState, record: WatcherRecord | None, pid: int | None, line: str
) -> None:
    data = watcher_data(state, record, pid, now=1300.0)
    assert watcher_line(data, "/w/.freshline/freshline.db") == line


def test_a_watcher_listed_without_its_record_says_only_its_pid() -> None:
    rows = listing_data([WatcherRecord("/w", 7, 0.0, ""), RECORD], now=1300.0)
    assert (rows[0]["uptime_s"], rows[0]["store"], rows[0]["started"]) == (None, None, None)
    lines = listing_lines(rows)
    assert lines[1].split() == ["/w", "7", "?", "?", "-"]
    assert lines[2].split() == ["/w", "4242", "5", "min", RECORD.store, "-"]
    assert listing_lines([]) == ["no watcher is running"]


def test_two_scans_at_once_each_report_their_own_span(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["n"]}})
    tracker = ws.tracker()
    tracker.flush()
    for i in range(20):
        ws.write(f"n/{i}.md", str(i))
        tracker.flush()
    results: list[list[str]] = []

    def scan() -> None:
        mine = ws.tracker()
        news = take_news(mine, mine.flush())
        results.append([c.path for n in news.values() for c in n.changes])

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reported = sorted(p for paths in results for p in paths)
    assert reported == sorted(f"n/{i}.md" for i in range(20))  # each once
    assert tracker.store.meta_get(mark_key("p")) == "20"


def test_a_project_is_marked_when_it_is_first_logged(ws: Workspace) -> None:
    ws.write("n/a.md", "a")
    ws.configure({"p": {"include": ["n"]}})
    tracker = ws.tracker()
    tracker.flush()
    assert tracker.store.meta_get(mark_key("p")) == "0"
    ws.write("n/b.md", "b")
    tracker.flush()  # another command's flush (a send): the next scan still reports it
    news = take_news(tracker, tracker.flush())
    assert [c.path for c in news["p"].changes] == ["n/b.md"]
    assert take_news(tracker, tracker.flush()) == {}
