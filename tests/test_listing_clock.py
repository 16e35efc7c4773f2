"""A listing begins at a moment read from the file system's clock (`listing.fs_clock`).

Whether a listed file was touched since the listing compares its ctime with that moment,
so both must come from one clock: the wall clock may run ahead of the file system's (a
coarse clock stamps a change up to a tick early, a network file system with its server's
clock) or behind it. Each test below sets the wall clock a second off either way while the
listing runs: a file written before the listing is no change, one written after it is.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.store.records import ChangeKind
from freshline.tracker.listing import STAMP_NAME, UNHASHED_META, first_tick, fs_clock

from .conftest import Workspace
from .test_tracker_listing import age, logged

SKEWS = {"wall clock ahead": 1_000_000_000, "wall clock behind": -1_000_000_000}


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    """A note written a while ago, a project by path."""
    age(ws.write("notes/a.md", "# A\n"))
    ws.configure({"p": {"include": ["notes"]}})
    return ws


@contextlib.contextmanager
def wall_clock(monkeypatch: pytest.MonkeyPatch, skew_ns: int) -> Iterator[None]:
    """The wall clock `skew_ns` off the real one (and the file system's) meanwhile."""
    real = time.time_ns
    with monkeypatch.context() as m:
        m.setattr(time, "time_ns", lambda: real() + skew_ns)
        yield


def list_with_skew(ws: Workspace, monkeypatch: pytest.MonkeyPatch, skew_ns: int) -> None:
    """A first flush that lists, while the wall clock is `skew_ns` off the real one."""
    with wall_clock(monkeypatch, skew_ns):
        ws.tracker().flush(defer=True)
    assert ws.tracker().store.meta_get(UNHASHED_META) == "1"  # listed, not read


@pytest.mark.parametrize("skew_ns", SKEWS.values(), ids=SKEWS.keys())
def test_a_file_written_just_before_the_listing_is_no_change(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch, skew_ns: int
) -> None:
    notes.write("notes/new.md", "just written\n")
    list_with_skew(notes, monkeypatch, skew_ns)
    notes.tracker().flush(defer=True)  # takes the stat of each file untouched since
    notes.tracker().flush()  # reads every file
    assert logged(notes) == []


@pytest.mark.parametrize("skew_ns", SKEWS.values(), ids=SKEWS.keys())
def test_a_file_written_just_after_the_listing_began_is_told(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch, skew_ns: int
) -> None:
    list_with_skew(notes, monkeypatch, skew_ns)
    age(notes.write("notes/a.md", "# A, edited\n"), 30)  # its mtime says nothing
    notes.tracker().flush(defer=True)
    assert logged(notes) == [(ChangeKind.MODIFIED, "notes/a.md", None)]


def test_the_clock_falls_between_changes_before_and_after(tmp_path: Path) -> None:
    for i in range(20):
        before = tmp_path / f"before-{i}"
        before.write_text("x")
        now = fs_clock(str(tmp_path))
        after = tmp_path / f"after-{i}"
        after.write_text("y")
        assert now is not None
        assert before.stat().st_ctime_ns < now <= after.stat().st_ctime_ns


def test_a_stamp_that_cannot_be_written_lists_nothing(notes: Workspace) -> None:
    (notes.root / ".freshline" / STAMP_NAME).mkdir()  # a folder where the stamp goes
    assert fs_clock(str(notes.root)) is None
    t = notes.tracker()
    t.flush(defer=True)
    assert [(e.path, e.hashed) for e in t.store.index_iter()] == [("notes/a.md", True)]
    assert t.store.meta_get(UNHASHED_META) != "1"


def test_a_workspace_that_is_gone_has_no_clock(tmp_path: Path) -> None:
    assert fs_clock(str(tmp_path / "gone")) is None
    assert not (tmp_path / "gone").exists()


def readings(*values: int) -> Iterator[int]:
    """A clock that reads `values`, then its last one for ever."""
    return itertools.chain(values, itertools.repeat(values[-1]))


@pytest.mark.parametrize(
    ("clock", "wait_ns", "tick"),
    [
        (readings(5, 6), 0, 6),  # a fine clock: the second touch ticks
        (readings(5, 5, 5, 7), 10**9, 7),  # a coarse one: the next tick
        (readings(5, 4, 6), 10**9, 6),  # a reading back in time is no tick
        (readings(5), 0, None),  # no tick in the time given
        (readings(5), 2_000_000, None),
    ],
)
def test_first_tick(clock: Iterator[int], wait_ns: int, tick: int | None) -> None:
    assert first_tick(clock.__next__, wait_ns) == tick


def test_the_stamp_is_freshline_s_own(notes: Workspace) -> None:
    notes.tracker().flush(defer=True)
    assert (notes.root / ".freshline" / STAMP_NAME).is_file()
    assert [e.path for e in notes.tracker().store.index_iter()] == ["notes/a.md"]
