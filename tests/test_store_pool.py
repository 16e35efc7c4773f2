"""The connection pool's bookkeeping (store/pool.py), apart from any database: connections
here are numbered tokens, opened and closed by the test's own functions."""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.store.pool import Pool, PoolClosed, PoolTimeout


class Opener:
    """Makes numbered connections and remembers which were closed."""

    def __init__(self) -> None:
        self.numbers = itertools.count(1)
        self.closed: list[int] = []

    def open(self) -> int:
        return next(self.numbers)

    def close(self, conn: int) -> None:
        self.closed.append(conn)


def pool_of(size: int) -> tuple[Pool[int], Opener]:
    opener = Opener()
    return Pool(opener.open, opener.close, size), opener


def test_an_idle_connection_is_taken_before_a_new_one_is_opened() -> None:
    pool, _ = pool_of(2)
    first = pool.take(0)
    pool.give(first)
    assert pool.take(0) == first
    assert pool.opened == 1


def test_a_full_pool_makes_the_caller_wait_then_time_out() -> None:
    pool, _ = pool_of(1)
    pool.take(0)
    with pytest.raises(PoolTimeout, match="all 1 connections busy"):
        pool.take(0.05)


def test_a_waiting_caller_gets_the_connection_given_back() -> None:
    pool, _ = pool_of(1)
    conn = pool.take(0)
    waiting = threading.Thread(target=lambda: pool.give(pool.take(30)))
    waiting.start()
    pool.give(conn)
    waiting.join(30)
    assert not waiting.is_alive() and pool.opened == 1 and pool.idle == 1


def test_a_broken_connection_is_closed_with_the_idle_ones() -> None:
    pool, opener = pool_of(3)
    a, b, c = pool.take(0), pool.take(0), pool.take(0)
    pool.give(a)
    pool.give(b)
    pool.give(c, reusable=False)
    assert sorted(opener.closed) == [a, b, c]
    assert pool.opened == 0 and pool.take(0) not in (a, b, c)


def test_a_failed_open_frees_its_place() -> None:
    def refuse() -> int:
        raise OSError("no server")

    pool: Pool[int] = Pool(refuse, lambda conn: None, 1)
    for _ in range(2):
        with pytest.raises(OSError, match="no server"):
            pool.take(0)
    assert pool.opened == 0


def test_close_closes_the_idle_and_then_each_one_given_back() -> None:
    pool, opener = pool_of(2)
    idle, taken = pool.take(0), pool.take(0)
    pool.give(idle)
    pool.close()
    assert opener.closed == [idle]
    pool.give(taken)
    assert opener.closed == [idle, taken] and pool.opened == 0
    with pytest.raises(PoolClosed):
        pool.take(0)


@pytest.mark.parametrize("size", [0, -1])
def test_a_pool_holds_at_least_one_connection(size: int) -> None:
    with pytest.raises(ValueError, match="at least one"):
        pool_of(size)


@given(size=st.integers(1, 4), steps=st.lists(st.sampled_from(["take", "give", "break"]),
                                              max_size=40))
def test_never_more_than_size_open_and_every_connection_accounted_for(
    size: int, steps: list[str]
) -> None:
    pool, opener = pool_of(size)
    taken: list[int] = []
    for step in steps:
        if step == "take" and len(taken) < size:
            taken.append(pool.take(0))
        elif taken and step in ("give", "break"):
            pool.give(taken.pop(0), reusable=step == "give")
        assert pool.opened == len(taken) + pool.idle <= size
        assert not set(taken) & set(opener.closed)  # nobody holds a closed connection
    if len(taken) == size:
        with pytest.raises(PoolTimeout):
            pool.take(0)
