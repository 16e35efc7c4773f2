"""The watcher's pure parts: which folders it watches, what an event path is about, how
a watched workspace is shown, durations; and what `scan` reports (its marks move by
compare-and-set)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces.cli.watchers import listing_lines, watcher_data, watcher_line
from freshline.interfaces.text import duration
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
    assert plain.tops() == PATHS.tops() == (ROOT, f"{ROOT}/.freshline/cookies")
    assert not plain.wants("/w/.git") and not plain.wants("/w/.git/refs/heads")


@pytest.mark.parametrize(
    ("folder", "watched"),
    [
        ("/w", True), ("/w/notes", True), ("/w/notes/deep/er", True),
        ("/w/.freshline", False),  # the store writes there: it would wake at every write
        ("/w/.freshline/cookies", True), ("/w/.freshline/snapshots", False),
        ("/w/.git", True),  # HEAD and packed-refs
        ("/w/.git/refs", True), ("/w/.git/refs/heads", True), ("/w/.git/refs/heads/team", True),
        ("/w/.git/refs/remotes/origin", True), ("/w/.git/refs/tags", True),
        ("/w/.git/refs/freshline", False), ("/w/.git/refs/freshline/conversations", False),
        ("/w/.git/objects", False), ("/w/.git/objects/ab", False), ("/w/.git/logs", False),
        ("/w/sub/.git", False), ("/w/sub/.freshline", False),  # a nested repository's, workspace's
        ("/elsewhere", False), ("/", False),
    ],
)
def test_which_folders_the_watcher_watches(folder: str, watched: bool) -> None:
    assert PATHS.wants(folder) is watched


@given(st.lists(st.sampled_from(["a", ".git", ".freshline", "refs", "heads", "objects"]),
                min_size=1, max_size=5))
def test_a_folder_with_an_event_worth_hearing_is_watched(parts: list[str]) -> None:
    """Every event a watched folder can report is a hint, a ref, a cookie or the config;
    a folder whose every entry sorts as nothing is not watched (or only to reach one
    that is)."""
    folder = "/".join([ROOT, *parts])
    inside = PATHS.sort(f"{folder}/x")[0]
    if inside is not Seen.NOTHING:
        assert PATHS.wants(folder)
    if not PATHS.wants(folder):
        assert inside is Seen.NOTHING or folder == f"{ROOT}/.freshline"


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


VIEW = {"workspace": "/w", "state": "watching", "pid": 4242, "started": 1000.0,
        "store": "/w/.freshline/freshline.db", "error": None}


@pytest.mark.parametrize(
    ("view", "line"),
    [
        (VIEW, "watcher: watching (service pid 4242, up 5 min)"),
        (VIEW | {"error": "oops"}, "watcher: watching (service pid 4242, up 5 min); last "
         "error: oops"),
        (VIEW | {"store": "pg://x/db"}, "watcher: watching (service pid 4242, up 5 min, "
         "writing to pg://x/db)"),
        (VIEW | {"state": "starting"}, "watcher: starting (service pid 4242, up 5 min)"),
        (VIEW | {"state": "not watched", "store": None, "error": "freshline.toml: bad"},
         "watcher: not watched (service pid 4242, up 5 min); last error: freshline.toml: bad"),
        (None, "watcher: not running"),
    ],
)
def test_the_watcher_line(view: dict[str, object] | None, line: str) -> None:
    data = watcher_data(view, now=1300.0)
    assert watcher_line(data, "/w/.freshline/freshline.db") == line


def test_the_workspaces_the_service_watches_as_a_table() -> None:
    rows = [VIEW | {"workspace": "/a", "started": None}, VIEW]
    lines = listing_lines(rows, now=1300.0)
    assert lines[1].split() == ["/a", "watching", "?", VIEW["store"], "-"]
    assert lines[2].split() == ["/w", "watching", "5", "min", VIEW["store"], "-"]
    assert listing_lines([]) == ["the service watches no workspace"]


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
