"""A hypothesis state machine of random tool calls against a workspace that grows hostile:
files with control characters in their names, symlinks in and out of the project, hard
links to files outside the root, paths with `..`, absolute paths and doubled slashes.

Invariants, after every call, in live and isolated mode:
- no output holds the content of a secret, an excluded, out-of-scope or internal file, or
  a file outside the root (all of which hold a `NO-` marker);
- nothing outside the project's writable files changes: not the files outside the root
  (hard links included), not secrets, not excluded or internal files;
- an ordinary project file read by its own path reads back its content.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from freshline.access import Rules
from freshline.agent import Toolbox, ToolCall, ToolMode
from freshline.paths import under
from freshline.scope import FileFacts, Scope
from freshline.sensitive import is_secret

FORBIDDEN = "NO-"
SCOPE = Scope.from_strings(["notes"], ["notes/excluded"])
RULES = Rules(
    admits=lambda rel: SCOPE.matches(FileFacts(rel)),
    admits_folder=lambda rel: under(rel, "notes") and not under(rel, "notes/excluded"),
)
# Where a new file goes, and whether its content may be read.
PLACES = {"ok": ("notes", True), "excluded": ("notes/excluded", False),
          "private": ("private", False), "secret": ("notes", False)}
NAMES = st.text(st.sampled_from("ab.-_ \n\t\x1b\u202e\u00e9"), min_size=1, max_size=6).filter(
    lambda n: n not in (".", "..")
)
TOOLS = ["list", "read", "search", "write", "edit", "chmod"]
SHAPES = ["{p}", "./{p}", "notes/../{p}", "{p}/", "{root}/{p}", "../{p}", "notes/x/../../{p}",
          "{p}//", "{root}/../ws/{p}", "..", "/", "{root}"]


class ToolMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.root = self.tmp / "ws"
        self.count = 0
        self.known: list[str] = []  # root-relative paths, "../x" for outside the root
        self.readable: set[str] = set()  # ordinary project files
        base = {"notes/ok.md": "OK-0", "notes/.env": "NO-env", "notes/excluded/x.md": "NO-x",
                "private/p.md": "NO-p", ".git/config": "NO-git", "freshline.toml": "NO-toml",
                ".freshline/freshline.db": "NO-db", "../outside.txt": "NO-outside",
                "../linked.txt": "LINKED"}
        for rel, text in base.items():
            self._put(rel, text)
        self.readable.add("notes/ok.md")
        self.live = Toolbox(self.root, ToolMode.LIVE, RULES)
        self.isolated = Toolbox(self.root, ToolMode.ISOLATED, RULES)
        self.frozen = self._protected()

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _put(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.known.append(rel)

    def _protected(self) -> dict[Path, bytes]:
        """Every file no tool may change: outside the root, and the forbidden ones."""
        out = {p: p.read_bytes() for p in self.tmp.iterdir() if p.is_file()}
        for path in self.root.rglob("*"):
            if path.is_file() and not path.is_symlink() and b"NO-" in path.read_bytes():
                out[path] = path.read_bytes()
        return out

    @rule(place=st.sampled_from(sorted(PLACES)), name=NAMES)
    def add_file(self, place: str, name: str) -> None:
        folder, allowed = PLACES[place]
        rel = f"{folder}/{name}{'.pem' if place == 'secret' else ''}"
        if os.path.lexists(self.root / rel):
            return
        self.count += 1
        text = f"{'OK' if allowed else 'NO'}-{self.count}"
        self._put(rel, text)
        if allowed and not is_secret(rel):
            self.readable.add(rel)
        self.frozen = self._protected()

    @rule(name=NAMES, goal=st.integers(min_value=0), absolute=st.booleans())
    def add_symlink(self, name: str, goal: int, absolute: bool) -> None:
        link = self.root / "notes" / f"link{name}"
        if os.path.lexists(link):
            return
        target = self.root / self.known[goal % len(self.known)]
        link.symlink_to(target.resolve() if absolute else os.path.relpath(target, link.parent))
        self.known.append(f"notes/link{name}")

    @rule(name=NAMES)
    def add_hardlink(self, name: str) -> None:
        link = self.root / "notes" / f"hard{name}"
        if not os.path.lexists(link):
            os.link(self.tmp / "linked.txt", link)
            self.known.append(f"notes/hard{name}")

    @rule(tool=st.sampled_from(TOOLS), which=st.integers(min_value=0),
          shape=st.sampled_from(SHAPES), isolated=st.booleans())
    def call(self, tool: str, which: int, shape: str, isolated: bool) -> None:
        rel = self.known[which % len(self.known)]
        path = shape.format(p=rel, root=self.root)
        args: dict[str, object] = {"path": path, "pattern": "N[O]-|OK-|LINKED",
                                   "content": "OK-written", "old": "K", "new": "K!",
                                   "executable": True}
        box = self.isolated if isolated else self.live
        result = box.run(ToolCall("c", tool, args))
        assert FORBIDDEN not in result.content, (tool, path, result.content)

    @rule(which=st.integers(min_value=0))
    def read_own_file(self, which: int) -> None:
        rel = sorted(self.readable)[which % len(self.readable)]
        result = self.live.run(ToolCall("c", "read", {"path": rel}))
        assert not result.is_error and result.content == (self.root / rel).read_text()

    @invariant()
    def nothing_protected_changed(self) -> None:
        for path, data in self.frozen.items():
            assert path.read_bytes() == data, path


@pytest.mark.timeout(300)
def test_random_tool_calls_never_leak_or_write_outside() -> None:
    run_state_machine_as_test(
        ToolMachine,
        settings=settings(max_examples=40, stateful_step_count=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )
