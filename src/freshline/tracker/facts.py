"""Notes' tags and properties: read only while a scope matches on them.

Parsing notes is most of a first scan's work, and only tag and property patterns look at
what it finds. So a flush parses the notes it reads only while a scope it compares needs
them: the config's (the new side of the flush) or one the store remembers (the old side).
Other notes are stored unparsed (`IndexEntry.parsed` False).

The flush whose config first needs them reads every unparsed note again (a full scan,
before the write lock like every parse). A note whose bytes did not change gets the facts
its entry lacked, exactly. One renamed or edited in the same flush has lost its old bytes:
its old side stands with the facts of its new side (`stand_in`). The two steps the flush
logs, the scope change judged on the files before the batch and then the batch judged in
the new scope, pass through that same middle state, so together they still say exactly
what differs between the old scope on the old files and the new scope on the new ones.
A note deleted in that flush is judged by its path alone in both steps, for the same
reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from freshline.scope import Scope
from freshline.store.records import IndexEntry
from freshline.tracker.observed import Observed


def needs_facts(scopes: Iterable[Scope]) -> bool:
    """Whether any of `scopes` matches on a note's tags or properties."""
    return any(scope.needs_facts for scope in scopes)


def with_facts(entry: IndexEntry, source: IndexEntry) -> IndexEntry:
    """`entry` with the tags and properties of `source` (read from the same bytes, or
    standing in for bytes nobody can read any more)."""
    return replace(entry, tags=source.tags, properties=source.properties, parsed=True)


def stand_in(observed: Iterable[Observed], put: Iterable[IndexEntry]) -> Callable[
    [IndexEntry], IndexEntry
]:
    """For a scan's observations and the entries it wrote: a function giving an index
    entry from before the scan, unparsed, the facts of what it became (the new side of
    its observation, else the entry read again at its path); others as they are."""
    after: dict[str, IndexEntry] = {}
    for o in observed:  # first: a renamed note's path may hold a new file now
        if o.old is not None and o.new is not None and not o.old.parsed:
            after[o.old.path] = o.new
    for e in put:
        after.setdefault(e.path, e)

    def known(entry: IndexEntry) -> IndexEntry:
        source = None if entry.parsed else after.get(entry.path)
        return entry if source is None or not source.parsed else with_facts(entry, source)

    return known


def observed_with_facts(
    observed: Iterable[Observed], known: Callable[[IndexEntry], IndexEntry]
) -> list[Observed]:
    """The observations, each old side with the facts `known` gives it."""
    return [o if o.old is None else replace(o, old=known(o.old)) for o in observed]
