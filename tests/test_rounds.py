"""Shared rounds (`tracker/rounds.py`): callers waiting at once share one run of the work,
and no caller is served by a run that began before it asked."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.tracker.rounds import Rounds


class Recorded:
    """Work that records when each run began and ended; `hold` keeps a run going."""

    def __init__(self, failures: int = 0) -> None:
        self.runs: list[tuple[float, float]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.running = threading.Event()
        self.failures = failures

    def __call__(self) -> None:
        began = time.monotonic()
        self.running.set()
        self.hold.wait(10)
        if self.failures:
            self.failures -= 1
            raise OSError("the flush failed")
        self.runs.append((began, time.monotonic()))


def joined(rounds: Rounds, count: int) -> tuple[list[threading.Thread], list[float]]:
    """`count` threads joining at once; when each one asked (filled as they start)."""
    asked: list[float] = []

    def join() -> None:
        asked.append(time.monotonic())
        rounds.join()

    threads = [threading.Thread(target=join) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, asked


def held_round(work: Recorded) -> tuple[Rounds, threading.Thread]:
    """Rounds of `work`, the first one running (held) for the thread returned."""
    rounds = Rounds(work)
    work.hold.clear()
    first = threading.Thread(target=rounds.join)
    first.start()
    assert work.running.wait(10)
    return rounds, first


def test_callers_waiting_while_a_round_runs_share_the_next_one() -> None:
    """Seen (issue 30, load): calls waiting for a flush ran theirs one after another."""
    work = Recorded()
    rounds, first = held_round(work)
    waiting, _asked = joined(rounds, 8)
    time.sleep(0.1)  # all eight are waiting behind the first round
    work.hold.set()
    for thread in [first, *waiting]:
        thread.join(10)
    assert len(work.runs) == 2  # the first round, and one more for all eight


def test_a_round_that_began_before_the_call_does_not_serve_it() -> None:
    work = Recorded()
    rounds, first = held_round(work)
    late, asked = joined(rounds, 1)
    time.sleep(0.05)
    assert late[0].is_alive()
    work.hold.set()
    late[0].join(10)
    first.join(10)
    assert [began >= asked[0] for began, _ended in work.runs] == [False, True]


def test_a_round_that_failed_serves_nobody() -> None:
    work = Recorded(failures=1)
    rounds = Rounds(work)
    work.hold.clear()
    failed: list[BaseException] = []

    def lead() -> None:
        try:
            rounds.join()
        except OSError as exc:
            failed.append(exc)

    leader = threading.Thread(target=lead)
    leader.start()
    assert work.running.wait(10)
    others, _asked = joined(rounds, 3)
    time.sleep(0.05)
    work.hold.set()
    for thread in [leader, *others]:
        thread.join(10)
    assert len(failed) == 1  # the leader heard it; those waiting took the next round
    assert len(work.runs) >= 1
    work.failures = 1
    with pytest.raises(OSError):  # and a later failure reaches its caller again
        rounds.join()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=0.01), min_size=1, max_size=6))
def test_every_caller_is_served_by_a_round_that_began_after_it_asked(
    delays: list[float],
) -> None:
    work = Recorded()
    rounds = Rounds(work)
    served: list[tuple[float, float]] = []  # (asked, returned)

    def call(delay: float) -> None:
        time.sleep(delay)
        asked = time.monotonic()
        rounds.join()
        served.append((asked, time.monotonic()))

    threads = [threading.Thread(target=call, args=(d,)) for d in delays]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(served) == len(delays)
    for asked, returned in served:
        assert any(asked <= began and ended <= returned for began, ended in work.runs)
    ordered = sorted(work.runs)
    assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:], strict=False))  # one at a time
    assert len(work.runs) <= len(delays)
