"""Step sequences the tracker's state machines once failed on, replayed exactly.

Hypothesis found each once: under some timing on a loaded machine, or in a longer run than
the suite's, and a rerun need not find it again. So each is kept here as the steps it
took, run on every backend with the machine's invariant checked after each step; beside
them, the smallest case of a cause.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis.stateful import RuleBasedStateMachine

from freshline.store.records import ChangeKind

from .conftest import StoreBackend, Workspace
from .test_tracker_listing import ListingMachine, age

Steps = list[tuple[str, dict[str, Any]]]


class Drawn:
    """Hypothesis' `data()` as a step drew from it: the values given, in order."""

    def __init__(self, *values: object) -> None:
        self.values = list(values)

    def draw(self, _strategy: object) -> object:
        return self.values.pop(0)


SEEN: dict[str, tuple[type[RuleBasedStateMachine], Steps]] = {
    # A listed folder renamed, then a scope that starts to need tags: its notes, read at
    # their new paths but stored unparsed, were taken for files listed by name.
    "listing, folder renamed, tag scope": (ListingMachine, [
        ("rename_folder", {"pair": ("a", "d")}),
        ("deferred_flush", {}),
        ("edit_config", {"scope": ["a", "#t"]}),
        ("deferred_flush", {}),
    ]),
    # Notes that left the scope and came back, then moved with their folder: told
    # renamed and modified, though their content was what the reader held
    # (`coalesce.net_lookups` never looked at it: the new path had changed but once).
    "left, back, folder renamed": (ListingMachine, [
        ("rename_folder", {"pair": ("a", "d")}),
        ("edit_config", {"scope": ["a", "#t"]}),
        ("deferred_flush", {}),
        ("edit_config", {"scope": ["a"]}),
        ("deferred_flush", {}),
        ("edit_config", {"scope": ["a", "#t"]}),
        ("deferred_flush", {}),
        ("rename_folder", {"pair": ("d", "a")}),
        ("deferred_flush", {}),
    ]),
    # Out of the scope by a folder rename (logged as deleted), back in by its tag, then
    # moved back: told modified with no content to find it unchanged by
    # (`coalesce`: an arrival where the reader's file was lost keeps that file's content).
    "deleted, back by a tag, folder renamed back": (ListingMachine, [
        ("delete", {"data": ("a/s/z.md",)}),  # the values `data()` drew
        ("flush", {}),
        ("rename_folder", {"pair": ("a", "d")}),
        ("deferred_flush", {}),
        ("edit_config", {"scope": ["a", "#t"]}),
        ("deferred_flush", {}),
        ("rename_folder", {"pair": ("d", "a")}),
        ("deferred_flush", {}),
    ]),
}


@pytest.mark.parametrize("name", SEEN)
def test_a_sequence_seen_failing(backend: StoreBackend, name: str) -> None:
    machine_type, steps = SEEN[name]
    machine = type("OnBackend", (machine_type,), {"backend": backend})()
    try:
        machine.every_reader_catches_up_exactly()
        for rule, arguments in steps:
            drawn = {k: Drawn(*v) if k == "data" else v for k, v in arguments.items()}
            getattr(machine, rule)(**drawn)
            machine.every_reader_catches_up_exactly()
    finally:
        machine.teardown()


def test_a_note_read_since_the_listing_is_parsed_when_a_scope_needs_tags(
    ws: Workspace,
) -> None:
    """A note the listing named, read since at a new path (its folder renamed: its ctime
    stays older than the listing) while another file is still unread. The flush whose
    scope starts to need tags reads it again and parses it, whatever its stat."""
    age(ws.write("notes/sub/c.md", "#paper\n"))
    age(ws.write("notes/a.md", "# A\n"))
    ws.configure({"p": {"include": ["notes"]}})
    ws.tracker().flush(defer=True)
    os.rename(ws.root / "notes/sub", ws.root / "notes/moved")
    ws.tracker().flush(defer=True)  # reads notes/moved/c.md, takes the stat of a.md
    ws.configure({"p": {"include": ["#paper"]}})
    t = ws.tracker()
    changes = t.flush(defer=True).projects["p"].changes
    assert [(c.kind, c.path) for c in changes if c.path] == [(ChangeKind.LEFT, "notes/a.md")]
    entry = t.store.index_get("notes/moved/c.md")
    assert entry is not None and entry.parsed and entry.tags == ("paper",)
    assert [e.path for e in t.files_in_scope("p")] == ["notes/moved/c.md"]
