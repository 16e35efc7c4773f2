"""Who holds `freshline serve`'s connections and which it lets go first (issue 47), pure:
`occupancy.Occupancy` against a model of its rules, table tests of its edge cases, the
room the open-files limit leaves (`files.connection_room`), and the log's throttle.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from freshline.interfaces.server.files import RESERVE, connection_room
from freshline.interfaces.server.logs import Throttle
from freshline.interfaces.server.occupancy import SLOW, WAITING, Capacity, Occupancy, Phase, Slot

LIMITS = {Phase.HEADERS: 10.0, Phase.BODY: 30.0, Phase.IDLE: 30.0}


def occupancy(total: int = 10, per_address: int = 3, spare: int = 2) -> Occupancy:
    return Occupancy(Capacity(total, per_address, LIMITS, spare=spare))


def admit(occ: Occupancy, key: str, now: float, exempt: bool = False) -> Slot:
    slot = occ.admit(key, exempt, now).slot
    assert slot is not None
    return slot


# --- table tests ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("open_", "base", "expected"),
    [
        (0, 10.0, 10.0),
        (50, 10.0, 10.0),  # half full: not shrunk yet
        (75, 10.0, 5.0),  # half way to full: half the limit
        (95, 10.0, 1.0),  # near full: the floor (1 s), not 1 s of 10 %
        (100, 10.0, 1.0),  # full
        (100, 0.5, 0.5),  # a limit under the floor stays what it is
        (60, 30.0, 24.0),
    ],
)
def test_the_time_limits_shrink_from_half_full_to_the_floor(
    open_: int, base: float, expected: float
) -> None:
    capacity = Capacity(100, 10, dict.fromkeys(WAITING, base))
    assert capacity.limit(Phase.HEADERS, open_) == pytest.approx(expected)


def test_an_address_at_its_limit_gives_up_its_stalest_slow_connection_first() -> None:
    occ = occupancy(per_address=3)
    idle, slow, newer = (admit(occ, "a", t) for t in (1.0, 2.0, 3.0))
    occ.move(idle, Phase.IDLE, 0.5)  # idle since before the others began: still given up last
    occ.move(newer, Phase.BODY, 4.0)
    admission = occ.admit("a", False, 5.0)
    assert admission.evicted is slow and admission.slot is not None
    assert admit(occ, "b", 5.0).key == "b"  # another address has its own count
    assert occ.admit("a", False, 6.0).evicted is newer
    assert occ.admit("a", False, 7.0).evicted is admission.slot  # HEADERS since 5 vs IDLE
    assert occ.live("a") == 3


def test_a_connection_being_handled_is_never_given_up() -> None:
    occ = occupancy(total=3, per_address=2)
    handled = [admit(occ, "a", t) for t in (1.0, 2.0)]
    for slot in handled:
        occ.move(slot, Phase.HANDLING, 3.0)
    assert occ.admit("a", False, 4.0).slot is None
    assert occ.expired(1000.0) == []
    waiting = admit(occ, "b", 5.0)
    assert occ.accepting()  # full, but with one to give up
    newcomer = occ.admit("c", False, 6.0)
    assert newcomer.evicted is waiting and newcomer.slot is not None
    occ.move(newcomer.slot, Phase.HANDLING, 6.5)
    assert not occ.accepting()  # only handled ones are left to give up
    assert occ.admit("d", False, 7.0).slot is None
    assert occ.open == 4  # the given-up one holds its file until it is released
    occ.release(waiting)
    assert occ.open == 3 and not occ.accepting()


def test_a_full_server_gives_up_connections_only_within_its_spare_files() -> None:
    occ = occupancy(total=2, per_address=5, spare=2)
    slots = [admit(occ, "a", t) for t in (1.0, 2.0)]
    first = occ.admit("b", False, 3.0)
    second = occ.admit("c", False, 4.0)
    assert [first.evicted, second.evicted] == slots  # the stalest first
    assert occ.open == 4 and not occ.accepting()  # two closing: no spare file left
    assert occ.admit("d", False, 5.0).slot is None
    occ.release(slots[0])
    assert occ.accepting() and occ.admit("d", False, 6.0).evicted is first.slot


def test_a_trusted_proxy_is_held_only_to_the_total() -> None:
    occ = occupancy(total=5, per_address=1)
    proxied = [admit(occ, "proxy", float(t), exempt=True) for t in range(5)]
    assert all(not s.closing for s in proxied)
    assert occ.admit("proxy", True, 9.0).evicted is proxied[0]  # full: the stalest goes


def test_slots_expire_by_their_phase_and_sooner_when_the_server_fills() -> None:
    occ = occupancy(total=10)
    headers = admit(occ, "a", 0.0)
    idle = admit(occ, "b", 0.0)
    occ.move(idle, Phase.IDLE, 0.0)
    assert occ.next_deadline() == 10.0
    assert occ.expired(9.9) == []
    assert occ.expired(10.0) == [headers]
    occ.release(headers)
    for n in range(8):  # 9 open of 10: the limits shrink to 30 × 0.2 = 6 s
        admit(occ, f"c{n}", 20.0)
    assert occ.next_deadline() == pytest.approx(6.0)
    assert occ.expired(6.01) == [idle]


def test_a_release_is_counted_once() -> None:
    occ = occupancy()
    slot = admit(occ, "a", 0.0)
    occ.release(slot)
    occ.release(slot)
    assert occ.open == 0 and occ.live("a") == 0 and list(occ.slots()) == []


@pytest.mark.parametrize(
    ("files", "wanted", "room"),
    [
        (1024, 4096, 1024 - RESERVE),  # the default soft limit of many systems
        (1_048_576, 4096, 4096),
        (RESERVE, 4096, 0),
        (100, 4096, 0),
        (20_000, 64, 64),
    ],
)
def test_the_open_files_limit_leaves_room_for_connections(
    files: int, wanted: int, room: int
) -> None:
    assert connection_room(files, wanted) == room


# --- against a model --------------------------------------------------------------------------

KEYS = ["a", "b", "c"]
STEP = st.floats(0.001, 20)  # time moves on between events: no two slots wait since a tie


class OccupancyMachine(RuleBasedStateMachine):
    """Random arrivals, phase changes, closes, expiries and makings of room, checked
    against what the rules say each should do."""

    @initialize(total=st.integers(1, 8), per_address=st.integers(1, 4),
                spare=st.integers(0, 3))
    def start(self, total: int, per_address: int, spare: int) -> None:
        self.occ = Occupancy(Capacity(total, per_address, LIMITS, spare=spare))
        self.now = 0.0
        self.slots: list[Slot] = []  # not released

    def _waiting(self, key: str | None = None) -> list[Slot]:
        return [s for s in self.slots if not s.closing and s.phase in WAITING
                and (key is None or s.key == key)]

    @staticmethod
    def _first_to_go(candidates: list[Slot]) -> Slot | None:
        slow = [s for s in candidates if s.phase in SLOW]
        pool = slow or candidates
        return min(pool, key=lambda s: s.since) if pool else None

    @rule(dt=STEP, key=st.sampled_from(KEYS))
    def arrive(self, dt: float, key: str) -> None:
        self.now += dt
        exempt = key == "c"  # a trusted proxy's
        live = len([s for s in self.slots if s.key == key and not s.closing])
        capacity = self.occ.capacity
        at_limit = not exempt and live >= capacity.per_address
        full = len(self.slots) >= capacity.total
        spare = len(self.slots) < capacity.total + capacity.spare
        if at_limit:
            expected_out = self._first_to_go(self._waiting(key))
        elif full:
            expected_out = self._first_to_go(self._waiting())
        else:
            expected_out = None
        admission = self.occ.admit(key, exempt, self.now)
        if (at_limit or full) and (expected_out is None or not spare):
            assert admission.slot is None and admission.evicted is None
            return
        assert admission.evicted is expected_out
        assert admission.slot is not None and admission.slot.phase is Phase.HEADERS
        self.slots.append(admission.slot)

    @precondition(lambda self: self.slots)
    @rule(dt=STEP, index=st.integers(0, 100), phase=st.sampled_from(list(Phase)))
    def move(self, dt: float, index: int, phase: Phase) -> None:
        self.now += dt
        slot = self.slots[index % len(self.slots)]
        before = (slot.phase, slot.since)
        self.occ.move(slot, phase, self.now)
        if slot.closing or before[0] is phase:
            assert (slot.phase, slot.since) == before
        else:
            assert (slot.phase, slot.since) == (phase, self.now)

    @precondition(lambda self: self.slots)
    @rule(index=st.integers(0, 100))
    def close(self, index: int) -> None:
        slot = self.slots.pop(index % len(self.slots))
        self.occ.release(slot)
        assert slot.released

    @rule(dt=st.floats(0, 40))
    def expire(self, dt: float) -> None:
        self.now += dt
        open_ = len(self.slots)
        due = {s for s in self._waiting()
               if s.since + self.occ.capacity.limit(s.phase, open_) <= self.now}
        assert set(self.occ.expired(self.now)) == due
        assert all(s.closing for s in due)

    @invariant()
    def counts_hold(self) -> None:
        if not hasattr(self, "occ"):
            return
        capacity = self.occ.capacity
        assert self.occ.open == len(self.slots) <= capacity.total + capacity.spare
        assert len([s for s in self.slots if not s.closing]) <= capacity.total
        assert self.occ.accepting() == (len(self.slots) < capacity.total or (
            len(self.slots) < capacity.total + capacity.spare and bool(self._waiting())))
        for key in KEYS:
            live = [s for s in self.slots if s.key == key and not s.closing]
            assert self.occ.live(key) == len(live)
            if key != "c":
                assert len(live) <= self.occ.capacity.per_address
        assert set(self.occ.slots()) == set(self._waiting())
        deadlines = [s.since + self.occ.capacity.limit(s.phase, len(self.slots))
                     for s in self._waiting()]
        assert self.occ.next_deadline() == (min(deadlines) if deadlines else None)


def test_the_occupancy_follows_its_rules() -> None:
    run_state_machine_as_test(
        OccupancyMachine,
        settings=settings(max_examples=40, stateful_step_count=25, deadline=None))


def test_each_kind_of_log_record_is_let_through_once_a_second() -> None:
    now = [0.0]
    throttle = Throttle(1.0, lambda: now[0])

    def record(msg: str, *args: object, name: str = "uvicorn.error") -> logging.LogRecord:
        return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, None)

    assert throttle.filter(record("failed %s", "a"))
    assert not throttle.filter(record("failed %s", "b"))  # the same kind, other arguments
    assert throttle.filter(record("other"))
    assert throttle.filter(record("failed %s", "c", name="freshline"))  # another logger
    now[0] = 0.99
    assert not throttle.filter(record("failed %s", "d"))
    now[0] = 1.0
    let = record("failed %s", "100%")
    assert throttle.filter(let)
    assert let.getMessage() == "failed 100% (2 more like this held back)"
    assert throttle.filter(record("other"))  # nothing held back: as it was
