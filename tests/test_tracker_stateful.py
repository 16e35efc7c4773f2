"""A hypothesis state machine over real files: random edits, config changes and flushes.

Several edits and config changes may come between two flushes. Invariant: the index's
in-scope tree is the one on disk at the last flush (judged from the files themselves:
their tags, properties and blobs), and for every reader at an earlier epoch, replaying
the log since that epoch onto the in-scope tree the reader saw gives exactly that tree
(no miss, no phantom, nothing the reader still holds told again), or a compacted answer
when the reader is below `compacted_through` (forgotten below `forgotten_through`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from freshline.access import file_facts
from freshline.scope import Scope
from freshline.store.records import Change, ChangeKind
from freshline.tracker.hashing import blob_of

from .conftest import StoreBackend, Workspace

NAMES = ["a/x.md", "a/y.md", "a/s/z.md", "b/x.md", "b/w.txt", "c/v.md"]
BODIES = ["plain", "tagged #t", "---\ntags: [t]\n---\nfront", "other text"]
SCOPES = [["a"], ["a", "#t"], ["b", "*.txt"], ["**"], ["#t"]]


def replay(tree: dict[str, str], changes: list[Change], today: dict[str, str],
           unread: frozenset[str] = frozenset()) -> dict[str, str]:
    """Apply a coalesced change set at once; re-read paths the reader is told to re-read.
    A path in `unread` (listed, its content never read) may be told modified though the
    reader holds it: the tracker cannot know that its content came back."""
    out = dict(tree)
    renames = [c for c in changes if c.kind is ChangeKind.RENAMED and not c.detail]
    for c in renames:
        assert c.old_path is not None
        out.pop(c.old_path, None)
    for c in renames:
        assert c.old_path is not None
        assert c.old_path in tree, f"phantom rename source {c.old_path}"
        out[c.path] = tree[c.old_path]
    for c in changes:
        if c.kind in (ChangeKind.DELETED, ChangeKind.LEFT):
            assert c.path in out, f"phantom {c.kind.value} {c.path}"
            del out[c.path]
        elif c.kind in (ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.ENTERED):
            assert c.path in today, f"phantom {c.kind.value} {c.path}"
            # net: what the reader still holds is not told again
            assert (c.kind is not ChangeKind.MODIFIED or c.path in unread
                    or out.get(c.path) != today[c.path]), c
            out[c.path] = today[c.path]
    return out


class TrackerMachine(RuleBasedStateMachine):
    backend: StoreBackend  # each example gets a fresh store on it

    def __init__(self) -> None:
        super().__init__()
        self.backend.renew()
        self.tmp = Path(tempfile.mkdtemp())
        self.ws = Workspace(self.tmp)
        self.scope = SCOPES[0]
        self.ws.configure({"p": {"include": self.scope}}, change_log_cap=12)
        self.tracker = self.ws.tracker()
        self.tracker.scan()
        self.readers: dict[int, dict[str, str]] = {0: {}}
        self.truth: dict[str, str] = {}  # the in-scope tree on disk at the last flush
        self.writes = 0

    def teardown(self) -> None:
        self.tracker.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def existing(self) -> list[str]:
        return sorted(n for n in NAMES if (self.tmp / n).exists())

    @rule(name=st.sampled_from(NAMES), body=st.sampled_from(BODIES), salt=st.integers(0, 3))
    def write(self, name: str, body: str, salt: int) -> None:
        # Each write gets an mtime of its own in the past: a scan trusts the stat of a file
        # it saw before (none is racily clean), as it would in a workspace at rest.
        self.writes += 1
        stamp = time.time() - 1000 + self.writes
        os.utime(self.ws.write(name, body + "\n" * salt), (stamp, stamp))

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        present = self.existing()
        if present:
            (self.tmp / data.draw(st.sampled_from(present))).unlink()

    @rule(data=st.data(), dest=st.sampled_from(NAMES))
    def rename(self, data: st.DataObject, dest: str) -> None:
        present = self.existing()
        if present and not (self.tmp / dest).exists():
            source = data.draw(st.sampled_from(present))
            (self.tmp / dest).parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.tmp / source, self.tmp / dest)

    @rule(pair=st.sampled_from([("a", "d"), ("d", "a"), ("b", "e"), ("e", "b")]))
    def rename_folder(self, pair: tuple[str, str]) -> None:
        old, new = (self.tmp / p for p in pair)
        if old.is_dir() and not new.exists():
            os.rename(old, new)

    @rule(scope=st.sampled_from(SCOPES))
    def edit_config(self, scope: list[str]) -> None:
        self.scope = scope
        self.ws.configure({"p": {"include": scope}}, change_log_cap=12)
        self.tracker = self.ws.tracker()

    @rule()
    def flush(self) -> None:
        self.truth = self.on_disk()
        self.tracker.scan()
        self.readers[self.tracker.epoch("p")] = self.truth
        assert {e.path: e.blob for e in self.tracker.files_in_scope("p")} == self.truth

    def on_disk(self) -> dict[str, str]:
        """The files the scope holds now, judged from their own bytes."""
        scope = Scope.from_strings(self.scope)
        found = {}
        for folder, _, files in os.walk(self.tmp):
            for name in files:
                rel = Path(folder, name).relative_to(self.tmp).as_posix()
                if scope.matches(file_facts(self.tmp, rel)):
                    found[rel] = blob_of(self.tmp / rel) or ""
        return found

    @invariant()
    def every_reader_catches_up_exactly(self) -> None:
        today = self.truth
        state = self.tracker.store.project_state("p")
        assert state is not None
        for epoch, seen in self.readers.items():
            answer = self.tracker.changes_since("p", epoch)
            if answer.compacted:
                assert epoch < state.compacted_through
                assert answer.forgotten == (epoch < state.forgotten_through)
                continue
            assert replay(seen, answer.changes, today, self.unread(epoch)) == today

    def unread(self, epoch: int) -> frozenset[str]:
        """Paths whose content the tracker had not read at some point since `epoch` (none:
        every flush reads)."""
        return frozenset()


def test_tracker_state_machine(backend: StoreBackend) -> None:
    run_state_machine_as_test(
        type("OnBackend", (TrackerMachine,), {"backend": backend}),
        # PostgreSQL: fewer examples, each a new schema migrated from nothing.
        settings=settings(max_examples=60 if backend.server is None else 30,
                          stateful_step_count=20, deadline=None),
    )
