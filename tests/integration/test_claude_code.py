"""The hook under the real Claude Code CLI (`clients.CLAUDE_CODE`), offline.

Claude Code runs in print mode with its API pointed at a loopback stub of the Anthropic
Messages API (`anthropic_stub.py`, streaming), telemetry off, a private HOME, and the hook
installed by `freshline hook install claude-code`: http hooks to the service, each with
its stand-in command, and a command at SessionStart. With no service running (most tests
here), the stand-ins answer; with one, it answers over HTTP. What the model was given is
read off the requests the stub received; the last message of a request is the turn being
asked.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from freshline.context.phrases import RESUMED
from freshline.interfaces import autostart, serviceclient
from freshline.interfaces.service.daemon import Service
from freshline.session import SessionManager
from freshline.store import DeliveryState, SessionState
from tests.conftest import Workspace, install_hook, wait_for
from tests.fake_model_servers import FakeReply
from tests.integration.anthropic_stub import (
    AnthropicStub,
    Responder,
    Seen,
    answered_tool,
    last_user_text,
    plain,
)
from tests.integration.clients import CLAUDE_CODE, install

pytestmark = pytest.mark.timeout(900)  # the first run installs the client

MODEL = "claude-sonnet-4-5"
# `claude -p` runs whose SessionEnd must each close its session (issue 26 asks for 10: each
# run costs Claude Code's start-up, about 3 s here, so the suite runs 2 and
# bench/claude_code_end.py the 10).
END_RUNS = int(os.environ.get("FRESHLINE_CLAUDE_END_RUNS", "2"))
MANIFEST = '<project_context project="p"'
UPDATES = '<project_context_updates project="p"'
OFFLINE = {"ANTHROPIC_API_KEY": "sk-offline", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1"}


def updates_block(text: str) -> str | None:
    """The updates block in a text, if any."""
    found = re.search(r"<project_context_updates .*?</project_context_updates>", text, re.S)
    return found.group(0) if found else None


def named(block: str, root: Path) -> set[str]:
    """The workspace paths a block names."""
    return set(re.findall(re.escape(f"{root}/") + r"(\S+?\.md)\b", block))


class ClaudeCode:
    """The Claude Code CLI in one workspace, against one stub."""

    def __init__(self, executable: Path, root: Path, stub: AnthropicStub, log: Path) -> None:
        self.executable = executable
        self.root = root
        self.stub = stub
        self.env = {**os.environ, **OFFLINE, "ANTHROPIC_BASE_URL": stub.url,
                    "FRESHLINE_HOOK_LOG": str(log)}

    def args(self, *more: str) -> list[str]:
        return [str(self.executable), "-p", *more, "--model", MODEL,
                "--allowedTools", "Bash Write Read", "--permission-mode", "acceptEdits"]

    def prompt(self, text: str, resume: bool = True) -> list[Seen]:
        """One `claude -p` run (continuing the last session); the requests it made."""
        before = len(self.stub.seen)
        command = self.args(text, *(["--continue"] if resume else []))
        done = subprocess.run(command, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
        return self.stub.since(before)

    def conversation(self, *turns: str, between: Any = None) -> list[list[Seen]]:
        """Several turns in one process (`--input-format stream-json`); `between(i)` runs
        before turn i > 0. The requests of each turn."""
        command = self.args("--input-format", "stream-json", "--output-format", "stream-json",
                            "--verbose")
        process = subprocess.Popen(command, cwd=self.root, env=self.env, text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
        assert process.stdin is not None and process.stdout is not None
        seen: list[list[Seen]] = []
        try:
            for i, turn in enumerate(turns):
                if i and between is not None:
                    between(i)
                before = len(self.stub.seen)
                message = {"type": "user", "message": {"role": "user", "content": turn}}
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                for line in process.stdout:  # until the turn's result
                    if json.loads(line).get("type") == "result":
                        break
                seen.append(self.stub.since(before))
            process.stdin.close()
            assert process.wait(timeout=120) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        return seen

    def transcript_cwds(self) -> set[str]:
        """Every working directory the session's transcript recorded."""
        found: set[str] = set()
        for path in Path(os.environ["HOME"], ".claude", "projects").rglob("*.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines():
                cwd = json.loads(line).get("cwd")
                if isinstance(cwd, str):
                    found.add(cwd)
        return found


@pytest.fixture(scope="module")
def executable() -> Path:
    return install(CLAUDE_CODE)


@pytest.fixture
def vault(two_projects: Workspace) -> Workspace:
    return two_projects


@contextmanager
def running(
    executable: Path, vault: Workspace, tmp_path: Path, responder: Responder = plain
) -> Iterator[ClaudeCode]:
    """Claude Code with the hook installed and a stub answering as `responder` says."""
    install_hook(vault.root)
    log = tmp_path / "hook.log"
    with AnthropicStub(responder) as stub:
        yield ClaudeCode(executable, vault.root, stub, log)
    assert not log.exists(), log.read_text(encoding="utf-8")  # the hook never failed


@pytest.fixture
def claude(executable: Path, vault: Workspace, tmp_path: Path) -> Iterator[ClaudeCode]:
    """Claude Code with no service: the stand-in commands answer its hooks."""
    with running(executable, vault, tmp_path) as claude_code:
        yield claude_code


@pytest.fixture
def served(executable: Path, vault: Workspace, tmp_path: Path,
           service: Service) -> Iterator[ClaudeCode]:
    """Claude Code with the service running (in this process): it answers the http hooks
    and the command at SessionStart."""
    with running(executable, vault, tmp_path) as claude_code:
        yield claude_code


def test_manifest_first_then_exactly_what_changed_then_the_manifest_after_compact(
    served: ClaudeCode, vault: Workspace
) -> None:
    claude = served
    [first] = claude.prompt("hello", resume=False)
    assert MANIFEST in first.last and f"{vault.root}/notes/a.md" in first.last
    assert "other/x.md" not in first.text
    [listed] = json.loads(subprocess.run(
        [sys.executable, "-m", "freshline", "session", "list", "--json"], cwd=vault.root,
        capture_output=True, text=True, check=True).stdout)
    [transcript] = Path(os.environ["HOME"], ".claude", "projects").rglob("*.jsonl")
    assert listed["agent_session"] == f"claude-code {transcript.stem}"
    assert listed["state"] == "closed"  # SessionEnd closed it
    log = json.loads(subprocess.run(
        [sys.executable, "-m", "freshline", "log", listed["id"], "--json"], cwd=vault.root,
        capture_output=True, text=True, check=True).stdout)
    assert [e["content"] for e in log if e["turn"]] == ["hello"]  # the prompt's checkpoint

    vault.write("notes/a.md", "# A, edited\n")
    vault.write("notes/new.md", "# New\n")
    vault.write("other/y.md", "# elsewhere\n")
    [second] = claude.prompt("what changed?")
    block = updates_block(second.last)
    assert block is not None and MANIFEST not in second.last
    assert named(block, vault.root) == {"notes/a.md", "notes/new.md"}

    claude.prompt("/compact")
    [after] = claude.prompt("where were we?")
    assert MANIFEST in after.text and RESUMED not in after.text
    assert f"{vault.root}/notes/new.md" in after.text


def test_every_session_end_closes_its_session_through_the_service(
    served: ClaudeCode, vault: Workspace, service: Service
) -> None:
    claude = served
    for i in range(END_RUNS):
        claude.prompt(f"hello {i}", resume=False)
    service.hooks.drain()  # as the agent's next call queues behind them
    manager = SessionManager(vault.config())
    try:
        states = [s.state for s in manager.sessions()]
    finally:
        manager.close()
    assert len(states) == END_RUNS and SessionState.ACTIVE not in states
    assert [w["workspace"] for w in service.workspaces.listing()] == [str(vault.root)]


def test_five_prompts_over_http_each_change_told_once_though_the_service_is_killed(
    executable: Path, vault: Workspace, tmp_path: Path
) -> None:
    """Claude Code posts its hooks to the service; killed (kill -9) between two prompts,
    the next prompt is answered by the stand-in command, which starts the service again,
    and the one after over HTTP again: every change is told once, none twice."""
    mine = vault.root / "notes" / "mine.md"

    def responder(body: dict[str, Any]) -> FakeReply:
        if "WRITE-IT" in last_user_text(body) and not answered_tool(body):
            return FakeReply(tool_calls=[("toolu_w", "Write", {
                "file_path": str(mine), "content": "# Mine\n"})])
        return FakeReply(text="Noted.")

    def hooks_served() -> bool:
        pid_file = Path(serviceclient.runtime_dir(), serviceclient.HOOKS_PID_NAME)
        return pid_file.exists() and pid_file.read_text().strip() == str(autostart.running())

    edits = {1: "notes/e1.md", 2: "notes/e2.md", 3: "notes/e3.md", 4: "notes/e4.md"}
    pids: list[int | None] = []

    def between(turn: int) -> None:
        vault.write(edits[turn], f"# edit before turn {turn + 1}\n")
        pids.append(autostart.running())
        if turn == 2:
            os.kill(autostart.running() or 0, signal.SIGKILL)
            wait_for(lambda: autostart.running() is None, "the service gone")
        if turn == 3:
            wait_for(hooks_served, "the service the stand-in started again")

    autostart.spawn([str(vault.root)])
    try:
        wait_for(hooks_served, "the service answering http hooks")
        with running(executable, vault, tmp_path, responder) as claude:
            claude.env["FRESHLINE_AUTOWATCH"] = "1"  # the stand-in starts the service again
            turns = claude.conversation("hello", "WRITE-IT please", "and now?", "now?",
                                        "last one", between=between)
    finally:
        autostart.stop()
    assert pids[0] == pids[1] and pids[3] not in (None, pids[0])  # killed, started again
    assert MANIFEST in turns[0][0].last
    # Each turn's last message ends with its own block (Claude Code may join the turns
    # before it into that message: their blocks came first, each once).
    blocks = [re.findall(r"<project_context_updates .*?</project_context_updates>", t[0].last,
                         re.S) for t in turns[1:]]
    told = [named(b[-1], vault.root) for b in blocks]
    tokens = [re.findall(r'delivery="(\w+)"', b[-1]) for b in blocks]
    assert len({t for ts in tokens for t in ts}) == 4  # four deliveries, none made twice
    assert told == [{"notes/e1.md"}, {"notes/e2.md"}, {"notes/e3.md"}, {"notes/e4.md"}]
    assert mine.is_file()  # the agent's own write (PostToolUse over HTTP): never told back


def test_a_cd_in_bash_does_not_switch_projects(
    executable: Path, vault: Workspace, tmp_path: Path, service: Service
) -> None:
    def responder(body: dict[str, Any]) -> FakeReply:
        if "GO-OTHER" in last_user_text(body) and not answered_tool(body):
            return FakeReply(tool_calls=[("toolu_cd", "Bash", {
                "command": "cd other && pwd", "description": "Go to the other folder"})])
        return FakeReply(text="Noted.")

    def change(_turn: int) -> None:
        vault.write("notes/c.md", "# C\n")
        vault.write("other/y.md", "# Y\n")

    with running(executable, vault, tmp_path, responder) as claude:
        turns = claude.conversation("hello, GO-OTHER", "and now?", between=change)
        assert str(vault.root / "other") in claude.transcript_cwds()  # the agent did cd
        block = updates_block(turns[1][0].last)
        assert block is not None and block.startswith(UPDATES)
        assert named(block, vault.root) == {"notes/c.md"}


def test_a_dropped_context_is_delivered_again_with_its_epochs(
    claude: ClaudeCode, vault: Workspace
) -> None:
    claude.prompt("hello", resume=False)
    vault.write("notes/b.md", "# B\n")
    settings = vault.root / ".claude" / "settings.local.json"
    installed = settings.read_text(encoding="utf-8")
    data = json.loads(installed)
    for groups in data["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:  # a harness that drops the hook's context
                if "args" in hook:  # (no service: the stand-ins answer)
                    hook["args"][-1] += " > /dev/null"
                elif hook["type"] == "command":
                    hook["command"] += " > /dev/null"
    settings.write_text(json.dumps(data), encoding="utf-8")
    [dropped] = claude.prompt("anything new?")
    assert "project_context" not in dropped.last

    install_hook(vault.root)  # the hook as installed again
    assert settings.read_text(encoding="utf-8") == installed
    [again] = claude.prompt("anything new now?")
    block = updates_block(again.last)
    assert block is not None and named(block, vault.root) == {"notes/b.md"}
    manager = SessionManager(vault.config())
    try:
        [s] = manager.sessions()
        lost = manager.store.deliveries_of(s.id, DeliveryState.SUPERSEDED)
        assert lost, "the dropped delivery was given up on"
        since = lost[-1].staged["since"]
        assert f'from_epoch="{since}" to_epoch="{lost[-1].covers}"' in block
    finally:
        manager.close()


def test_the_agents_own_write_is_not_announced_back(
    executable: Path, vault: Workspace, tmp_path: Path, service: Service
) -> None:
    target = vault.root / "notes" / "mine.md"

    def responder(body: dict[str, Any]) -> FakeReply:
        if "WRITE-IT" in last_user_text(body) and not answered_tool(body):
            return FakeReply(tool_calls=[("toolu_w", "Write", {
                "file_path": str(target), "content": "# Mine\n"})])
        return FakeReply(text="Done.")

    with running(executable, vault, tmp_path, responder) as claude:
        claude.prompt("hello", resume=False)
        claude.prompt("please WRITE-IT")
        assert target.is_file()
        vault.write("notes/theirs.md", "# Theirs\n")
        [later] = claude.prompt("anything new?")
        block = updates_block(later.last)
        assert block is not None and named(block, vault.root) == {"notes/theirs.md"}


def test_inside_an_agent_the_acp_proxy_runs_the_hook_says_nothing(
    claude: ClaudeCode, vault: Workspace
) -> None:
    """One owner per conversation: Claude Code started by `freshline acp` (which marks its
    agent) runs the hook too, and the hook leaves the conversation to the proxy."""
    claude.env["FRESHLINE_OWNER"] = "acp"
    [first] = claude.prompt("hello", resume=False)
    assert "project_context" not in first.text
    manager = SessionManager(vault.config())
    try:
        assert manager.sessions() == []
    finally:
        manager.close()
