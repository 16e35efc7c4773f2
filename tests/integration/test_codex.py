"""The hook and the MCP server under the real Codex CLI (`clients.CODEX`, 0.171), offline.

`codex exec` runs with a model provider pointed at a loopback stub of the Responses API
(`cli_stubs.py`), a private HOME whose config trusts the workspace, and the hook
installed by `freshline hook install codex` (its trust bypassed with
`--dangerously-bypass-hook-trust`, as a person would trust it with /hooks). One
conversation for the module: a first turn, then three `exec resume --last` turns, after a
change, after none, after another change; the model edits a note with its shell in the
second and adds two with one `apply_patch` in the third. Each hook context reaches the
model as a `developer` message of its own; a resumed request carries the whole history, so
the last request shows every block the conversation was ever given. Then the files are
rewound to where the second turn began. A second Codex home gets freshline as an MCP
server (`freshline mcp install codex`: for the trusted project, required) and one turn in
Codex's classic tool mode, in which the stub model calls open_session, project_updates,
acknowledge and project_updates again, a note being created between the two deliveries.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from freshline.config import load_config
from freshline.interfaces import autostart
from freshline.interfaces.cli.root import app
from freshline.session import SessionManager
from freshline.store import Acknowledgement
from tests.conftest import Workspace, wait_for
from tests.integration.cli_stubs import CliStub
from tests.integration.clients import CODEX, install

pytestmark = pytest.mark.timeout(900)  # the first run installs the client

MANIFEST = '<project_context project="p"'
UPDATES = '<project_context_updates project="p"'
EXEC = ("exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--json")
PATCH = ("*** Begin Patch\n*** Add File: notes/p1.md\n+one\n*** Add File: notes/p2.md\n+two\n"
         "*** End Patch\n")


def config_toml(stub: CliStub, root: Path, model: str = "gpt-5",
                sandbox: str = "read-only") -> str:
    """Codex's config: the stub as its provider, the workspace trusted. The hook's run
    writes files with a model Codex gives `apply_patch` (`gpt-5.5`)."""
    return f'''model = "{model}"
model_provider = "stub"
approval_policy = "never"
sandbox_mode = "{sandbox}"
check_for_update_on_startup = false

[analytics]
enabled = false

[otel]
exporter = "none"

[model_providers.stub]
name = "stub"
base_url = "{stub.url}/v1"
env_key = "STUB_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[projects."{root}"]
trust_level = "trusted"
'''


def developer_texts(body: dict[str, Any]) -> list[str]:
    """The developer messages' texts a request carried, in order."""
    return [part.get("text", "") for item in body.get("input", [])
            if item.get("type") == "message" and item.get("role") == "developer"
            for part in item.get("content", [])]


def blocks(body: dict[str, Any]) -> list[str]:
    """freshline's blocks among them."""
    return [t for t in developer_texts(body) if "<project_context" in t]


@dataclass
class Run:
    root: Path
    requests: list[dict[str, Any]]  # each turn's first request
    how: list[Acknowledgement | None]
    log: Path
    printed: str  # what `codex exec --json` printed, every run
    session: str  # the freshline session of Codex's


def tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The model's tool call in the second and third turns (none once its output came)."""
    items = body.get("input", [])
    if items and items[-1].get("type") in ("function_call_output", "custom_tool_call_output"):
        return None
    users = [i for i in items if i.get("role") == "user"]
    asked = json.dumps(users[-1]) if users else ""
    if "second question" in asked:
        return [{"type": "function_call", "id": "fc_1", "call_id": "call_shell",
                 "name": "exec_command", "status": "completed",
                 "arguments": json.dumps({"cmd": "printf 'by the shell\\n' >> notes/b.md"})}]
    if "third question" in asked:
        return [{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_patch",
                 "name": "apply_patch", "input": PATCH, "status": "completed"}]
    return None


def workspace(base: Path) -> Workspace:
    ws = Workspace(base / "ws")
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def codex_env(home: Path, stub: CliStub, root: Path, log: Path,
              writes: bool = False) -> dict[str, str]:
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    config = (config_toml(stub, root, "gpt-5.5", "workspace-write") if writes
              else config_toml(stub, root))
    (home / ".codex" / "config.toml").write_text(config, encoding="utf-8")
    return {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
            "STUB_API_KEY": "offline", "FRESHLINE_HOOK_LOG": str(log), "NO_COLOR": "1"}


def codex(env: dict[str, str], root: Path, *args: str) -> str:
    """One `codex` run (it must exit 0); what it printed."""
    done = subprocess.run([str(install(CODEX)), *args], cwd=root, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    install(CODEX)
    base = tmp_path_factory.mktemp("codex")
    ws = workspace(base)
    done = CliRunner().invoke(app, ["-w", str(ws.root), "hook", "install", "codex",
                                    "--project", "p"])
    assert done.exit_code == 0, done.output
    log = base / "hook.log"
    requests: list[dict[str, Any]] = []
    printed: list[str] = []
    with CliStub(responder=tools) as stub:
        env = codex_env(base / "home", stub, ws.root, log, writes=True)

        def turn(*args: str) -> None:
            before = len(stub.bodies("/v1/responses"))
            printed.append(codex(env, ws.root, *args))
            requests.append(stub.bodies("/v1/responses")[before])

        turn(*EXEC, "first question")
        ws.write("notes/b.md", "# B\n")
        turn(*EXEC, "resume", "--last", "second question")
        turn(*EXEC, "resume", "--last", "third question")
        ws.write("notes/a.md", "# A, edited\n")
        turn(*EXEC, "resume", "--last", "fourth question")
    how, session = acknowledged(ws.root)
    yield Run(ws.root, requests, how, log, "".join(printed), session)


def acknowledged(root: Path) -> tuple[list[Acknowledgement | None], str]:
    """How each delivery to the Codex session was acknowledged, oldest first, and the
    session."""
    manager = SessionManager(load_config(root))
    try:
        sessions = [s for s in manager.store.session_list() if (s.external_id or "").startswith(
            "codex:")]
        assert len(sessions) == 1  # resumed: one freshline session throughout
        return [d.how for d in manager.store.deliveries_of(sessions[0].id)], sessions[0].id
    finally:
        manager.close()


def test_the_manifest_goes_with_the_first_turn_only(run: Run) -> None:
    first = blocks(run.requests[0])
    assert len(first) == 1 and MANIFEST in first[0] and "notes/a.md" in first[0]
    assert not run.log.exists() or run.log.read_text() == ""


def test_each_change_reaches_the_model_once_in_the_next_turn(run: Run) -> None:
    told = [blocks(r) for r in run.requests]
    new = [after[len(before):] for before, after in zip([[], *told], told, strict=False)]
    assert len(new[1]) == 1 and UPDATES in new[1][0] and "notes/b.md" in new[1][0]
    assert new[2] == []  # nothing changed: nothing said
    assert len(new[3]) == 1 and "notes/a.md" in new[3][0] and "notes/b.md" not in new[3][0]
    assert "p1.md" not in new[3][0] and "p2.md" not in new[3][0]  # the patch's: its own
    whole = told[-1]  # the resumed history: every block once, in order
    assert len(whole) == 3 and [MANIFEST in whole[0], UPDATES in whole[1]] == [True, True]


def test_no_run_warns_of_a_hook_timeout_codex_clamps(run: Run) -> None:
    assert "error" in run.printed  # `--json` prints its warnings as error items
    assert "clamping" not in run.printed and "hook timeout" not in run.printed


def test_the_files_rewind_to_where_the_second_prompt_began(run: Run) -> None:
    """The shell's edit and both files of the patch are undone, byte for byte; the user's
    edit between the turns is named before it is overwritten."""
    assert (run.root / "notes/b.md").read_text() == "# B\nby the shell\n"
    assert (run.root / "notes/p2.md").read_text() == "two\n"
    done = CliRunner().invoke(app, ["-w", str(run.root), "rewind", run.session, "2", "--code",
                                    "--yes", "--json"])
    assert done.exit_code == 0, done.output
    rewind = json.loads(done.stdout)
    assert rewind["restored"] == ["notes/a.md", "notes/b.md", "notes/p1.md", "notes/p2.md"]
    assert [(o["path"], o["by"]) for o in rewind["overwrites"]] == [("notes/a.md", "outside")]
    assert (run.root / "notes/b.md").read_bytes() == b"# B\n"
    assert (run.root / "notes/a.md").read_bytes() == b"# A\n"
    assert not (run.root / "notes/p1.md").exists() and not (run.root / "notes/p2.md").exists()


def test_the_transcript_proves_each_delivery(run: Run) -> None:
    assert run.how[:2] == [Acknowledgement.TRANSCRIPT] * 2
    assert len(run.how) == 3


def test_context_stays_within_codex_limit(run: Run) -> None:
    texts = [t for r in run.requests for t in developer_texts(r)]
    assert not any(t.startswith("Warning: truncated output") for t in texts)
    assert all(len(t.encode()) <= 9_000 for t in blocks(run.requests[-1]))


class ToolScript:
    """The stub model's side of one Codex turn with freshline's MCP tools: each request
    answered by the next call, from what the last tool result said; `between` runs once
    the first delivery came."""

    def __init__(self, between: Any) -> None:
        self.between = between
        self.session = ""

    @staticmethod
    def results(body: dict[str, Any]) -> list[dict[str, Any]]:
        """The tool results a request carries, as the model reads them (JSON after
        Codex's `Output:` line)."""
        return [json.loads(str(item["output"]).split("Output:\n", 1)[1])
                for item in body.get("input", []) if item.get("type") == "function_call_output"]

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]] | None:
        results = self.results(body)
        step = len(results)
        if step == 0:
            return self.call(step, "open_session", project="p")
        last = results[-1]
        if step == 1:
            self.session = last["session"]
            return self.call(step, "project_updates", session=self.session)
        if step == 2:
            self.between()
            return self.call(step, "acknowledge", session=self.session, token=last["token"])
        if step == 3:
            return self.call(step, "project_updates", session=self.session)
        return None  # the text answer

    @staticmethod
    def call(step: int, name: str, **arguments: Any) -> list[dict[str, Any]]:
        return [{"type": "function_call", "id": f"fc_{step}", "call_id": f"call_{step}",
                 "namespace": "mcp__freshline", "name": name,
                 "arguments": json.dumps(arguments), "status": "completed"}]


@dataclass
class McpRun:
    root: Path
    requests: list[dict[str, Any]]  # every request of the turn, in order
    config: Path  # where the install went


@pytest.fixture(scope="module")
def mcp_run(tmp_path_factory: pytest.TempPathFactory) -> McpRun:
    base = tmp_path_factory.mktemp("codex-mcp")
    ws = workspace(base)
    script = ToolScript(lambda: ws.write("notes/Q&A <draft>.md", "# a new note\n"))
    with CliStub(script) as stub:
        env = codex_env(base / "home", stub, ws.root, base / "hook.log")
        with (base / "home" / ".codex" / "config.toml").open("a") as handle:
            handle.write("\n[features]\ncode_mode = false\n")  # the classic tool mode
        done = CliRunner().invoke(app, ["-w", str(ws.root), "mcp", "install", "codex"],
                                  env={"CODEX_HOME": env["CODEX_HOME"]})
        assert done.exit_code == 0, done.output
        codex(env, ws.root, *EXEC, "first question")
        # Seen: Codex gave the server no $XDG_RUNTIME_DIR, and it started a second service
        # in /tmp/freshline-UID, left running after the suite. The server starts the
        # service it did not find without waiting for it.
        wait_for(autostart.running, "the server's service in the user's runtime folder")
        autostart.stop()
        return McpRun(ws.root, stub.bodies("/v1/responses"), ws.root / ".codex" / "config.toml")


def test_codex_starts_the_server_installed_for_the_project(mcp_run: McpRun) -> None:
    """Installed in the trusted project's .codex/config.toml, `required`: Codex waited for
    freshline's server and gave the model its tools; Codex's own config holds no server."""
    tools = json.dumps(mcp_run.requests[0].get("tools", []))
    assert "project_updates" in tools and "open_session" in tools
    assert "start of every turn" in tools
    assert tomllib.loads(mcp_run.config.read_text())["mcp_servers"]["freshline"]["required"]
    codex_home = mcp_run.root.parent / "home" / ".codex" / "config.toml"
    assert "mcp_servers" not in tomllib.loads(codex_home.read_text())


def test_a_changed_path_reaches_the_model_through_project_updates(mcp_run: McpRun) -> None:
    """Seen: Codex passes only a tool's structured content to its model, and
    project_updates' held only {session, token, covers}: no change reached the model."""
    results = ToolScript.results(mcp_run.requests[-1])
    assert len(results) == 4
    manifest, news = results[1], results[3]
    assert "<project_context " in manifest["text"] and "notes/a.md" in manifest["text"]
    path = f"{mcp_run.root}/notes/Q&A <draft>.md"  # as it is on disk
    assert news["changes"] == [{"path": path, "kind": "created", "old_path": None}]
    assert "<project_context_updates " in news["text"] and f"- {path}\n" in news["text"]
