"""The hook under the real Gemini CLI (`clients.GEMINI_CLI`, 0.61), offline.

Gemini CLI runs in print mode (`gemini -p`) with its API pointed at a loopback stub
(`cli_stubs.py`: `GOOGLE_GEMINI_BASE_URL`), an API-key auth selected in a private HOME's
settings, the workspace trusted (`GEMINI_CLI_TRUST_WORKSPACE`), and the hook installed by
`freshline hook install gemini-cli`. One conversation, run once for the module: a first
turn, then two `--resume` turns, each after a file change (three turns, not four: a turn
takes 5-30 s, mostly Node's start-up). The model lists the workspace's folder in the
first, edits a note with `run_shell_command` in the second and writes one with
`write_file` in the third (`--yolo`: no confirmation). What the model got is read off the
recorded requests: the last user content of each is the turn being asked. Then the files
are rewound to where the second turn began.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from freshline.config import load_config
from freshline.interfaces.cli.root import app
from freshline.session import SessionManager
from freshline.store import Acknowledgement
from tests.conftest import Workspace
from tests.integration.cli_stubs import CliStub
from tests.integration.clients import GEMINI_CLI, install

pytestmark = pytest.mark.timeout(900)  # the first run installs the client

MODEL = "gemini-2.5-flash"
MANIFEST = '<project_context project="p"'
UPDATES = '<project_context_updates project="p"'
HOOK_CONTEXT = re.compile(r"<hook_context>(.*?)</hook_context>", re.S)
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}


@dataclass
class Turn:
    """One `gemini -p` run: the prompt, and the request bodies it made."""

    prompt: str
    requests: list[dict[str, Any]]

    @property
    def asked(self) -> str:
        """Every text of the last user content of its first request (the turn asked)."""
        contents = self.requests[0]["contents"]
        last = [c for c in contents if c.get("role") == "user"][-1]
        return "\n".join(p.get("text", "") for p in last["parts"])

    @property
    def history(self) -> str:
        """Every text the first request carried."""
        return json.dumps(self.requests[0]["contents"])

    @property
    def context(self) -> list[str]:
        """The hook contexts in the turn asked, unescaped (Gemini CLI 0.61 gives the model
        `<` and `>` in hook context as `&lt;` and `&gt;`)."""
        return [html.unescape(c) for c in HOOK_CONTEXT.findall(self.asked)]


@dataclass
class Run:
    root: Path
    turns: list[Turn]
    log: Path
    settings: dict[str, Any]
    how: list[Acknowledgement | None]  # each delivery's acknowledgement
    session: str  # the freshline session of the agent's


def tools(root: Path) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The model's tool call for each turn (none once the tool's result came back)."""
    def call(body: dict[str, Any]) -> dict[str, Any] | None:
        last = (body.get("contents") or [{}])[-1]
        parts = last.get("parts", [])
        if any("functionResponse" in p for p in parts):
            return None
        asked = " ".join(p.get("text", "") for p in parts)
        if "first question" in asked:
            return {"name": "list_directory", "args": {"dir_path": str(root)}}
        if "second question" in asked:
            return {"name": "run_shell_command",
                    "args": {"command": "printf 'by the shell\\n' >> notes/b.md"}}
        if "third question" in asked:
            return {"name": "write_file", "args": {"file_path": str(root / "notes/written.md"),
                                                   "content": "by write_file\n"}}
        return None

    return call


def listing(turn: Turn) -> str:
    """The text of the folder listing the model got back in a turn."""
    responses = [p["functionResponse"] for r in turn.requests for c in r["contents"]
                 for p in c.get("parts", []) if "functionResponse" in p
                 and p["functionResponse"].get("name") == "list_directory"]
    assert responses, "the model listed no folder"
    return json.dumps(responses[-1])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    gemini = install(GEMINI_CLI)
    base = tmp_path_factory.mktemp("gemini")
    ws = Workspace(base / "ws")
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    home = base / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    done = CliRunner().invoke(app, ["-w", str(ws.root), "hook", "install", "gemini-cli",
                                    "--project", "p"])
    assert done.exit_code == 0, done.output
    log = base / "hook.log"
    session = str(uuid.uuid4())
    with CliStub(gemini=tools(ws.root)) as stub:
        env = {**os.environ, "HOME": str(home), "GOOGLE_GEMINI_BASE_URL": stub.url,
               "GEMINI_API_KEY": "offline", "GEMINI_CLI_TRUST_WORKSPACE": "true",
               "FRESHLINE_HOOK_LOG": str(log), "NO_COLOR": "1"}

        def turn(prompt: str, *session_args: str) -> Turn:
            before = len(stub.bodies("streamGenerateContent"))
            done = subprocess.run(
                [str(gemini), "-p", prompt, "-m", MODEL, "--yolo", *session_args], cwd=ws.root,
                env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240)
            assert done.returncode == 0, done.stdout + done.stderr
            return Turn(prompt, stub.bodies("streamGenerateContent")[before:])

        turns = [turn("first question", "--session-id", session)]
        ws.write("notes/b.md", "# B\n")
        turns.append(turn("second question", "--resume", session))
        ws.write("notes/a.md", "# A, edited\n")
        turns.append(turn("third question", "--resume", session))
    settings = json.loads((ws.root / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    yield Run(ws.root, turns, log, settings,
              *acknowledged(ws.root, f"gemini-cli:{session}"))


def acknowledged(root: Path, external: str) -> tuple[list[Acknowledgement | None], str]:
    """How each delivery to the agent's session was acknowledged, oldest first, and the
    session."""
    manager = SessionManager(load_config(root))
    try:
        s = manager.store.session_by_external(external)
        assert s is not None
        return [d.how for d in manager.store.deliveries_of(s.id)], s.id
    finally:
        manager.close()


def test_the_installed_hook_answers_its_events(run: Run) -> None:
    assert set(run.settings["hooks"]) == {"BeforeAgent", "BeforeTool", "AfterTool",
                                          "AfterAgent", "PreCompress", "SessionEnd"}
    assert all(t.requests for t in run.turns)
    assert not run.log.exists() or run.log.read_text() == ""


def test_the_manifest_goes_with_the_first_prompt_only(run: Run) -> None:
    first = run.turns[0]
    assert len(first.context) == 1 and MANIFEST in first.context[0]
    assert "notes/a.md" in first.context[0]
    assert all(MANIFEST not in c for t in run.turns[1:] for c in t.context)


def test_each_change_reaches_the_model_once_in_the_next_turn(run: Run) -> None:
    _first, second, third = run.turns
    assert len(second.context) == 1 and UPDATES in second.context[0]
    assert "notes/b.md" in second.context[0] and "notes/a.md" not in second.context[0]
    assert len(third.context) == 1 and "notes/a.md" in third.context[0]
    assert "notes/b.md" not in third.context[0]  # the agent's own shell edit: not told back


def test_freshlines_folder_is_not_in_geminis_listing(run: Run) -> None:
    shown = listing(run.turns[0])
    assert "notes" in shown and ".freshline" not in shown


def test_the_files_rewind_to_where_the_second_prompt_began(run: Run) -> None:
    """The shell's edit and write_file's new note are undone, byte for byte; the user's
    edit between the turns is named before it is overwritten."""
    assert (run.root / "notes/b.md").read_text() == "# B\nby the shell\n"
    done = CliRunner().invoke(app, ["-w", str(run.root), "rewind", run.session, "2", "--code",
                                    "--yes", "--json"])
    assert done.exit_code == 0, done.output
    rewind = json.loads(done.stdout)
    assert rewind["restored"] == ["notes/a.md", "notes/b.md", "notes/written.md"]
    assert [(o["path"], o["by"]) for o in rewind["overwrites"]] == [("notes/a.md", "outside")]
    assert (run.root / "notes/b.md").read_bytes() == b"# B\n"
    assert (run.root / "notes/a.md").read_bytes() == b"# A\n"
    assert not (run.root / "notes/written.md").exists()


def test_the_transcript_proves_each_delivery(run: Run) -> None:
    assert run.how == [Acknowledgement.TRANSCRIPT] * 3  # the last settled at SessionEnd


def test_resume_keeps_the_earlier_prompts(run: Run) -> None:
    """The manifest is not given at SessionStart: with SessionStart context, Gemini CLI
    0.61 resumed a session without any of its earlier prompts."""
    last = run.turns[-1]
    for earlier in run.turns[:-1]:
        assert earlier.prompt in last.history


def test_context_stays_within_the_hook_budget(run: Run) -> None:
    assert all(len(c) <= 9_000 for t in run.turns for c in t.context)
