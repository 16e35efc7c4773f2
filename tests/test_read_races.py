"""Issue 47's reads under a race, on real files with another process swapping them.

- A folder swapped for a symlink (`renameat2(RENAME_EXCHANGE)` in a tight loop) never lets
  MCP `read_document`, the agent's `read` or its `search` show a file outside the
  workspace, git's own files or a secret folder's (seen: 16 of 600, 5 of 300, 12 of 100).
- The same swap between an isolated tool's check and its change never lets `write`,
  `delete` or `chmod` land outside (they change a file through its folder's descriptor).
- A file swapped for a FIFO never blocks a reader, and the service answers after.
- A file whose content flips during the agent's `read` never reaches it unscanned (seen:
  the scan's verdict was looked up by the content hashed just before the read, 11-15 of
  300 reads carried the token in clear).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from freshline.access import AccessDenied, Rules
from freshline.agent import Toolbox, ToolCall
from freshline.agent.runtime import toolbox_for
from freshline.errors import NotFoundError
from freshline.interfaces.mcp.service import FreshlineService
from freshline.session import SessionManager
from freshline.session.ledger import TurnLedger

from .conftest import Workspace, git

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "renameat2"),
    reason="renameat2(RENAME_EXCHANGE) is Linux's",
)

# Exchanges two names for as long as it lives: each call swaps what they name, atomically.
SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
print("ready", flush=True)
while libc.renameat2(-100, a, -100, b, 2) == 0:
    pass
sys.exit(ctypes.get_errno())
"""
INSIDE = "inside words\n"
OUTSIDE = "OUTSIDE-MARK"  # in every file the race must never show
T = TypeVar("T")
CALLS = 1000
TOKEN = "ghp_" + "Zq7Lk2Vx9Rt4Nw8Pb3Hm6Yc1Jd5Fs0Ga8KeT"  # a GitHub token: withheld wherever scanned


@contextmanager
def swapping(a: Path, b: Path) -> Iterator[None]:
    """Swap `a` and `b` in another process until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(a), str(b)],
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        yield
        assert proc.poll() is None, f"the swapper stopped (errno {proc.returncode})"
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def swapped(ws: Workspace, tmp_path: Path) -> Workspace:
    """`notes/sub/a.md` in scope, and beside it three links a race can swap `notes/sub`
    with: to a folder outside, to git's folder, to a secret folder."""
    ws.write("notes/sub/a.md", INSIDE)
    ws.write("notes/sub/config", INSIDE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text(f"{OUTSIDE} outside\n")
    git(ws.root, "init", "--quiet")
    ws.write(".git/a.md", f"{OUTSIDE} git\n")
    ws.write("notes/.ssh/a.md", f"{OUTSIDE} ssh\n")
    (ws.root / "notes/out").symlink_to(outside)
    (ws.root / "notes/git").symlink_to("../.git")
    (ws.root / "notes/ssh").symlink_to(".ssh")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def agent_tools(manager: SessionManager) -> Toolbox:
    """The agent's tools for a new session, with a turn's ledger as a send has."""
    s = manager.new("notes")
    return toolbox_for(manager, s, ledger=TurnLedger(manager.store, s.id, 1))


def test_a_folder_swapped_for_a_link_never_shows_what_it_leads_to(swapped: Workspace) -> None:
    root = swapped.root
    manager = SessionManager(swapped.config())
    service = FreshlineService(swapped.config())
    shown: dict[str, list[str]] = {"read_document": [], "read": [], "search": []}
    read = ToolCall("r", "read", {"path": "notes/sub/a.md"})
    search = ToolCall("s", "search", {"pattern": "words|MARK", "path": "notes/sub"})
    try:
        tools = agent_tools(manager)
        with swapping(root / "notes/sub", root / "notes/out"):
            # Each reader in turn, so each meets every phase of the swapping; MCP, which
            # flushes the workspace first, a call in five.
            for _ in range(CALLS // 5):
                try:
                    shown["read_document"].append(
                        service.read_document("notes/sub/a.md").text or "")
                except (AccessDenied, NotFoundError, OSError):
                    shown["read_document"].append("")  # refused, or failed: nothing shown
                for _ in range(2):
                    shown["read"].append(tools.run(read).content)
                    shown["search"].append(tools.run(search).content)
    finally:
        service.close()
        manager.close()
    assert sum(len(texts) for texts in shown.values()) == CALLS
    leaks = {reader: sum(OUTSIDE in text for text in texts) for reader, texts in shown.items()}
    assert leaks == {"read_document": 0, "read": 0, "search": 0}
    assert any(INSIDE in text for texts in shown.values() for text in texts)


def exchange(a: Path, b: Path) -> None:
    """Swap what `a` and `b` name, atomically."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def swapping_rules(a: Path, b: Path) -> Rules:
    """Rules whose first scope check swaps `a` and `b`: the moment a reader that checks a
    path and opens it by name later would be caught between the two."""
    swapped: list[bool] = []

    def admits(rel: str) -> bool:
        if not swapped:
            swapped.append(True)
            exchange(a, b)
        return rel.startswith("notes/")

    return Rules(admits=admits, admits_folder=admits)


@pytest.mark.parametrize("link", ["out", "git", "ssh"])
@pytest.mark.parametrize("tool", ["read", "search"])
def test_a_folder_swapped_between_the_check_and_the_read_is_not_followed(
    swapped: Workspace, link: str, tool: str
) -> None:
    root = swapped.root
    tools = Toolbox(root, rules=swapping_rules(root / "notes/sub", root / "notes" / link))
    args = {"path": "notes/sub/a.md"} if tool == "read" else {"pattern": "words|MARK",
                                                              "path": "notes/sub"}
    result = tools.run(ToolCall("c", tool, args)).content
    assert (root / "notes/sub").is_symlink()  # the swap happened, mid-call
    assert OUTSIDE not in result and INSIDE.strip() in result


@pytest.mark.parametrize(("tool", "args"), [
    ("write", {"path": "notes/sub/new.md", "content": "written\n"}),
    ("delete", {"path": "notes/sub/a.md"}),
    ("chmod", {"path": "notes/sub/a.md", "executable": True}),
])
def test_a_folder_swapped_between_the_check_and_the_change_is_not_followed(
    swapped: Workspace, tmp_path: Path, tool: str, args: dict[str, object]
) -> None:
    root, outside = swapped.root, tmp_path / "outside"
    before = {p.name: (p.read_bytes(), p.stat().st_mode) for p in outside.iterdir()}
    tools = Toolbox(root, mode="isolated",
                    rules=swapping_rules(root / "notes/sub", root / "notes/out"))
    result = tools.run(ToolCall("c", tool, args))
    assert (root / "notes/sub").is_symlink()  # the swap happened, mid-call
    assert result.is_error and "refused" in result.content
    assert {p.name: (p.read_bytes(), p.stat().st_mode) for p in outside.iterdir()} == before


def bounded(call: Callable[[], T], fifos: list[Path], limit_s: float = 20.0) -> T:
    """`call()`'s result; the test fails if it blocks (it is then let go: each FIFO gets
    writers that close at once, so a reader waiting on one reads its end, until it ends)."""
    done: list[T] = []
    worker = threading.Thread(target=lambda: done.append(call()), daemon=True)
    worker.start()
    worker.join(limit_s)
    if worker.is_alive():
        while worker.is_alive():  # (the failure path only) let each blocked open go
            for fifo in fifos:
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            worker.join(0.01)
        pytest.fail(f"a reader blocked on a FIFO for {limit_s:g} s")
    return done[0]


@pytest.fixture
def piped(ws: Workspace) -> Workspace:
    """`notes/sub/a.md` in scope and a FIFO beside it, `notes/fifo`."""
    ws.write("notes/sub/a.md", INSIDE)
    os.mkfifo(ws.root / "notes/fifo")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


@pytest.mark.parametrize("tool", ["read", "search"])
def test_a_file_swapped_for_a_fifo_after_the_check_never_blocks(
    piped: Workspace, tool: str
) -> None:
    root = piped.root
    file, fifo = root / "notes/sub/a.md", root / "notes/fifo"
    tools = Toolbox(root, rules=swapping_rules(file, fifo))
    args = {"path": "notes/sub/a.md"} if tool == "read" else {"pattern": "words",
                                                              "path": "notes/sub/a.md"}
    result = bounded(lambda: tools.run(ToolCall("c", tool, args)), [file, fifo])
    assert stat.S_ISFIFO(os.lstat(file).st_mode)  # the swap happened, mid-call
    assert INSIDE.strip() in result.content


def test_a_fifo_swapped_in_again_and_again_never_wedges_the_service(piped: Workspace) -> None:
    root = piped.root
    file, fifo = root / "notes/sub/a.md", root / "notes/fifo"
    piped.write("notes/b.md", "still here\n")
    service = FreshlineService(piped.config())

    def reads() -> list[str]:
        answers = []
        for _ in range(200):
            try:
                answers.append(service.read_document("notes/sub/a.md").text or "")
            except (AccessDenied, NotFoundError) as exc:
                answers.append(str(exc))
        return answers

    try:
        with swapping(file, fifo):
            answers = bounded(reads, [file, fifo])
        assert service.read_document("notes/b.md").text == "still here\n"
    finally:
        service.close()
    assert any(INSIDE in a for a in answers)
    refused = [a for a in answers if INSIDE not in a]
    assert all("not a regular file" in a or "no such file" in a for a in refused), refused[:3]


def test_a_file_changing_during_the_agents_read_is_scanned_as_it_was_read(
    ws: Workspace,
) -> None:
    f, g = ws.write("notes/f.md", "nothing to hide here\n"), ws.write("notes/g.md", "x")
    g.write_text(f"token = {TOKEN}\n")
    ws.configure({"notes": {"include": ["notes"]}})
    manager = SessionManager(ws.config())
    try:
        tools = agent_tools(manager)
        read = ToolCall("r", "read", {"path": "notes/f.md"})
        tools.run(read)  # its clean verdict is remembered, as after any earlier read
        with swapping(f, g):
            shown = [tools.run(read).content for _ in range(300)]
    finally:
        manager.close()
    assert sum(TOKEN in text for text in shown) == 0
    assert any("[secret withheld: github-token]" in text for text in shown)
