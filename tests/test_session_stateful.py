"""A hypothesis state machine over real files, config edits and sends (some failing).

Invariants, checked on every accepted send against a model of the in-scope files:
- every in-scope path whose content or presence differs from what the agent was last
  told (the manifest, then each accepted prompt) is named in that send's updates block,
  or the block carries the compacted marker;
- no path outside the project's scope (before or after) ever appears in a prompt, but as
  having left the project after a span the log only counts (it may have been created there);
- the cursor is exactly the epoch the accepted prompt covered, and a failed send moves
  nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from freshline.agent.errors import BackendError
from freshline.context.phrases import FOLDED_HEADING, FORGOTTEN
from freshline.session import SessionManager
from tests.conftest import StoreBackend, Workspace
from tests.test_session import Refusing, deliver, entries, unused

NAMES = ["notes/a.md", "notes/b.md", "notes/sub/c.md", "drafts/d.md", "other/e.md"]
SCOPES = [("notes",), ("notes", "drafts"), ("drafts",)]


def view(files: dict[str, int], scope: tuple[str, ...]) -> dict[str, int]:
    """The files a folder-only scope includes."""
    return {p: v for p, v in files.items() if p.split("/")[0] in scope}


class SessionMachine(RuleBasedStateMachine):
    backend: StoreBackend  # each example gets a fresh store on it

    def __init__(self) -> None:
        super().__init__()
        self.backend.renew()
        self.tmp = Path(tempfile.mkdtemp())
        (self.tmp / "ws").mkdir()
        self.ws = Workspace(self.tmp / "ws")
        self.files: dict[str, int] = {}  # path -> content length (unique per write)
        self.writes = 0
        self.scope = SCOPES[0]
        self.managers: dict[tuple[str, ...], SessionManager] = {}
        self.m = self._manager()
        self.session = self.m.new("p").id
        self.told = view(self.files, self.scope)  # what the agent knows once accepted

    def _manager(self) -> SessionManager:
        config = self.ws.configure({"p": {"include": list(self.scope)}}, change_log_cap=6)
        if self.scope not in self.managers:
            self.managers[self.scope] = SessionManager(config)
        return self.managers[self.scope]

    def teardown(self) -> None:
        for m in self.managers.values():
            m.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(name=st.sampled_from(NAMES))
    def write(self, name: str) -> None:
        self.writes += 1  # a new length each time, so no edit hides behind an equal stat
        self.ws.write(name, "x" * self.writes)
        self.files[name] = self.writes

    @precondition(lambda self: bool(self.files))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.files)))
        (self.ws.root / name).unlink()
        del self.files[name]

    @precondition(lambda self: bool(self.files))
    @rule(data=st.data(), to=st.sampled_from(NAMES))
    def rename(self, data: st.DataObject, to: str) -> None:
        name = data.draw(st.sampled_from(sorted(self.files)))
        if to == name:
            return
        (self.ws.root / to).parent.mkdir(parents=True, exist_ok=True)
        (self.ws.root / name).rename(self.ws.root / to)
        self.files[to] = self.files.pop(name)

    @rule(scope=st.sampled_from(SCOPES))
    def configure(self, scope: tuple[str, ...]) -> None:
        self.scope = scope
        self.m = self._manager()

    @rule()
    def failed_send(self) -> None:
        before = self.m.get(self.session)
        with pytest.raises(BackendError):
            deliver(self.m, self.session, "fail", Refusing())
        assert unused(self.m.get(self.session)) == unused(before)

    @rule()
    def send(self) -> None:
        turn = deliver(self.m, self.session, "ok")
        now = view(self.files, self.scope)
        root = self.ws.root.resolve()
        prompt = turn.wire_prompt
        # Behind the log's start paths are counted per folder (or, further back, the
        # manifest comes again): what changed is said, if not path by path.
        compacted = any(line in (turn.updates or "") for line in (FOLDED_HEADING, FORGOTTEN))
        if turn.held and turn.manifest and "previous manifest" not in turn.held:
            # a landing re-materialized: its fresh manifest lists exactly today's files
            listed = set(entries(turn.manifest, "Files ("))
            assert listed == {f"{root / p}" for p in now}, prompt
            self.told = dict(now)
        changed = {p for p in now.keys() | self.told.keys() if now.get(p) != self.told.get(p)}
        for path in changed:
            assert compacted or f"{root / path}" in (turn.updates or ""), (path, prompt)
        # A path the agent never knew is never named, unless the block counts a span the
        # log no longer lists: a file created there (counted) may then be told as leaving.
        for path in set(self.files) - now.keys() - self.told.keys():
            assert compacted or f"{root / path}" not in prompt, (path, prompt)
        assert self.m.get(self.session).cursor == turn.covers == self.m.tracker.epoch("p")
        assert self.m.in_scope.entries("p") == self.m.tracker.files_in_scope("p")
        self.told = now


@pytest.mark.timeout(110)
def test_session_machine(backend: StoreBackend) -> None:
    run_state_machine_as_test(
        type("OnBackend", (SessionMachine,), {"backend": backend}),
        settings=settings(
            max_examples=20,
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
