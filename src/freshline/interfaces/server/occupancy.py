"""Who holds the server's connections, and which to let go first (pure: no I/O, no clock).

A server has room for `Capacity.total` connections (below its open-files limit) and
`Capacity.per_address` from one client key (an IPv4 address, an IPv6 /64; trusted
proxies are exempt). Each connection is a `Slot` in a `Phase`, since a moment:

- past its phase's time limit a slot has expired (`Occupancy.expired`); the limits
  shrink as the server fills, from half full to full, down to `floor_s`, so slow
  clients are dropped early when room runs short (as Envoy's overload manager scales
  its timeouts);
- a new connection from a key at its limit takes the place of that key's stalest
  waiting slot, and one that comes when the server is full takes the place of the
  stalest waiting slot of all (as nginx reuses its idle connections when it runs out):
  waiting for headers or a body (a slow client) is given up before an idle keep-alive
  connection, and a slot whose request is being handled is never given up. A client that
  shares its address with an attacker still gets in: its connection is the newest, and
  it is handling as soon as its request is in.

A slot given up is `closing` until its owner releases it (its socket closed, a turn of the
event loop later): it still counts as open. Slots are given up for new ones only while
fewer than `Capacity.spare` are closing past `total`, so the files connections hold never
exceed `total + spare`; beyond that (or with nothing to give up) the listener accepts
nothing until a slot is released.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum


class Phase(Enum):
    """Where a connection's current request is, as far as time limits go."""

    IDLE = "idle"  # between requests (kept alive)
    HEADERS = "headers"  # a connection or a request began: its headers are due
    BODY = "body"  # the headers are in: the body is due
    HANDLING = "handling"  # the request is in (or the connection is ending): no limit


WAITING = (Phase.HEADERS, Phase.BODY, Phase.IDLE)  # the phases with a time limit
SLOW = (Phase.HEADERS, Phase.BODY)  # given up before IDLE
HALF_FULL = 0.5  # the time limits start to shrink here


@dataclass(frozen=True)
class Capacity:
    """How many connections, from whom, and for how long in each waiting phase."""

    total: int
    per_address: int
    limits: dict[Phase, float]  # seconds, for each of WAITING
    floor_s: float = 1.0  # the shortest a limit becomes when the server is full
    spare: int = 64  # files slots given up may hold past `total` until they are released

    def limit(self, phase: Phase, open_: int) -> float:
        """`phase`'s time limit with `open_` connections open."""
        fill = open_ / self.total
        base = self.limits[phase]
        if fill <= HALF_FULL:
            return base
        shrunk = base * (1 - fill) / (1 - HALF_FULL)
        return min(base, max(self.floor_s, shrunk))


@dataclass(eq=False)
class Slot:
    """One connection: its client key, phase and since when; `close` is its owner's."""

    key: str
    phase: Phase
    since: float
    closing: bool = False
    released: bool = False
    close: Callable[[], object] = field(default=lambda: None, repr=False)


@dataclass(frozen=True)
class Admission:
    """A new connection's fate: its slot (None: refused) and the slot given up for it."""

    slot: Slot | None
    evicted: Slot | None = None


class Occupancy:
    """The open slots, ordered by how long each has waited in its phase."""

    def __init__(self, capacity: Capacity) -> None:
        self.capacity = capacity
        self.open = 0  # slots not released, closing ones too
        self._live: Counter[str] = Counter()  # per key, slots not closing
        self._waiting = {p: OrderedDict[Slot, None]() for p in WAITING}
        self._by_key: dict[str, dict[Phase, OrderedDict[Slot, None]]] = {}

    def accepting(self) -> bool:
        """Whether a connection may be accepted now: there is room, or a waiting slot to
        give up for it and a spare file while that one closes."""
        if self.open < self.capacity.total:
            return True
        return self._spare() and self._stalest(self._waiting) is not None

    def admit(self, key: str, exempt: bool, now: float) -> Admission:
        """A connection from `key` arrived at `now`: its slot, in HEADERS, and the slot it
        takes the place of (its key's stalest when the key is at its limit, else the
        stalest of all when the server is full); or a refusal (none to give up)."""
        evicted = None
        if not exempt and self._live[key] >= self.capacity.per_address:
            evicted = self._stalest(self._by_key.get(key, {}))
        elif self.open >= self.capacity.total:
            evicted = self._stalest(self._waiting)
        else:
            return Admission(self._seat(key, now))
        if evicted is None or not self._spare():
            return Admission(None)
        self._give_up(evicted)
        return Admission(self._seat(key, now), evicted)

    def _spare(self) -> bool:
        return self.open < self.capacity.total + self.capacity.spare

    def _seat(self, key: str, now: float) -> Slot:
        slot = Slot(key, Phase.HEADERS, now)
        self.open += 1
        self._live[key] += 1
        self._enqueue(slot)
        return slot

    def move(self, slot: Slot, phase: Phase, now: float) -> None:
        """`slot` entered `phase` at `now` (nothing, for a slot closing)."""
        if slot.closing or slot.phase is phase:
            return
        self._dequeue(slot)
        slot.phase, slot.since = phase, now
        self._enqueue(slot)

    def release(self, slot: Slot) -> None:
        """`slot`'s connection is closed (again: nothing)."""
        if slot.released:
            return
        if not slot.closing:
            self._give_up(slot)
        slot.released = True
        self.open -= 1

    def expired(self, now: float) -> list[Slot]:
        """Give up every slot past its phase's time limit at `now`."""
        gone = []
        for phase, queue in self._waiting.items():
            limit = self.capacity.limit(phase, self.open)
            while queue and (slot := next(iter(queue))).since + limit <= now:
                self._give_up(slot)
                gone.append(slot)
        return gone

    def next_deadline(self) -> float | None:
        """When the next slot expires if nothing changes (None: none is waiting)."""
        deadlines = [next(iter(queue)).since + self.capacity.limit(phase, self.open)
                     for phase, queue in self._waiting.items() if queue]
        return min(deadlines, default=None)

    def slots(self) -> Iterator[Slot]:
        """The waiting slots, by phase, stalest first."""
        for queue in self._waiting.values():
            yield from queue

    def live(self, key: str) -> int:
        """How many slots of `key` are open and not closing."""
        return self._live[key]

    def _stalest(self, queues: dict[Phase, OrderedDict[Slot, None]]) -> Slot | None:
        heads = [next(iter(q)) for p in SLOW if (q := queues.get(p))]
        if heads:
            return min(heads, key=lambda s: s.since)
        idle = queues.get(Phase.IDLE)
        return next(iter(idle)) if idle else None

    def _give_up(self, slot: Slot) -> None:
        self._dequeue(slot)
        slot.closing = True
        self._live[slot.key] -= 1
        if self._live[slot.key] <= 0:
            del self._live[slot.key]

    def _enqueue(self, slot: Slot) -> None:
        if slot.phase in self._waiting:
            self._waiting[slot.phase][slot] = None
            keyed = self._by_key.setdefault(slot.key, {})
            keyed.setdefault(slot.phase, OrderedDict())[slot] = None

    def _dequeue(self, slot: Slot) -> None:
        if slot.phase not in self._waiting or slot.closing:
            return
        self._waiting[slot.phase].pop(slot, None)
        keyed = self._by_key.get(slot.key)
        if keyed is None:
            return
        queue = keyed.get(slot.phase)
        if queue is not None:
            queue.pop(slot, None)
            if not queue:
                del keyed[slot.phase]
        if not keyed:
            del self._by_key[slot.key]
