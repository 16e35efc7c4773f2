"""The hook pinned per Claude session and proven delivered by the transcript.

`Claude` plays Claude Code's part around the hook (its fast path, in this process, handing
each call to the watcher's socket; tests/test_hook.py runs the process itself): it sends
each event's payload (the shapes Claude Code 2.1 sends), sets `CLAUDE_PROJECT_DIR`, and
writes the session's transcript as Claude Code does — the hook's context as an attachment
when it takes it, an assistant entry when the model answers — or drops the context. The real
client runs in tests/integration/test_claude_code.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from freshline.context.phrases import RESUMED
from freshline.interfaces.hook.claude_code import ADAPTER
from freshline.interfaces.service.daemon import Service
from freshline.session import SessionManager
from freshline.session.engine import Deliveries
from freshline.store import Acknowledgement, DeliveryRecord, SessionState
from tests.conftest import Workspace, git, hook_in_process

# Every call answered by the workspace's watcher (its socket served in this process); the
# hook process doing the work itself is tests/test_hook.py's.
pytestmark = pytest.mark.usefixtures("service")

MANIFEST = "<project_context "
UPDATES = "<project_context_updates"


class Claude:
    """One Claude Code session driving the hook."""

    def __init__(self, ws: Workspace, cwd: Path, session: str = "c0ffee-1",
                 args: tuple[str, ...] = ("hook", "claude-code"),
                 transcript: bool = True, env: dict[str, str] | None = None) -> None:
        self.ws = ws
        self.env = env or {}
        self.project_dir = cwd
        self.cwd = cwd
        self.session = session
        self.args = args
        folder = ws.root.parent / "claude-home" / "projects"
        folder.mkdir(parents=True, exist_ok=True)
        self.transcript: Path | None = folder / f"{session}.jsonl" if transcript else None

    def call(self, event: str, **fields: Any) -> str:
        """Run the hook for one event, in this process as `freshline hook claude-code`
        runs it (through the watcher's socket); its additional context ("" when it
        printed none)."""
        data: dict[str, Any] = {"session_id": self.session, "cwd": str(self.cwd),
                                "hook_event_name": event, **fields}
        if self.transcript is not None:
            data["transcript_path"] = str(self.transcript)
        given = dict(zip(self.args, self.args[1:], strict=False))
        overrides = {"CLAUDE_PROJECT_DIR": str(self.project_dir), **self.env}
        agent = self.args[self.args.index("hook") + 1]
        printed = hook_in_process(json.dumps(data), overrides, agent,
                                  given.get("--workspace"), given.get("--project"))
        if not printed:
            return ""
        hooked = json.loads(printed)["hookSpecificOutput"]
        assert hooked["hookEventName"] == event
        text: str = hooked["additionalContext"]
        return text

    def _append(self, entry: dict[str, Any]) -> None:
        assert self.transcript is not None
        with self.transcript.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def take(self, context: str, event: str = "UserPromptSubmit") -> None:
        """Write the context to the transcript, as Claude Code does when it keeps it."""
        if context:
            self._append({"type": "attachment", "attachment": {
                "type": "hook_additional_context", "content": [context], "hookEvent": event}})

    def preview(self, context: str, event: str = "UserPromptSubmit") -> None:
        """Write what Claude Code 2.1 writes for context over its 10,000-character limit:
        the text saved to a file, the model given a 2 KB preview (recorded as seen)."""
        saved = f"Output too large ({len(context) / 1024:.1f}KB). Full output saved to: " \
                f"/home/u/.claude/projects/x/tool-results/hook-{event}-additionalContext.txt"
        shown = f"<persisted-output>\n{saved}\n\nPreview (first 2KB):\n{context[:2000]}\n...\n" \
                "</persisted-output>"
        self._append({"type": "attachment", "attachment": {
            "type": "hook_additional_context", "content": [shown], "hookEvent": event}})

    def answer(self) -> None:
        """The model answered a request."""
        self._append({"type": "assistant", "message": {"role": "assistant", "content": "ok"}})

    def start(self, source: str = "startup") -> str:
        return self.call("SessionStart", source=source)

    def prompt(self, text: str = "go", keep: bool = True) -> str:
        """A whole turn: SessionStart's context (if given) and the prompt's go out with the
        request, the model answers. `keep=False` drops the prompt's context."""
        told = self.call("UserPromptSubmit", prompt=text)
        if keep:
            self.take(told)
        self.answer()
        return told


@pytest.fixture(autouse=True)
def log(hook_log: Path) -> Path:
    return hook_log


@pytest.fixture
def two(two_projects: Workspace) -> Workspace:
    return two_projects


def session_of(ws: Workspace, claude: Claude) -> Any:
    m = SessionManager(ws.config())
    try:
        return m.store.session_by_external(ADAPTER.external_id(claude.session))
    finally:
        m.close()


def last_taken(ws: Workspace, claude: Claude) -> DeliveryRecord:
    """The Claude session's delivery acknowledged last."""
    m = SessionManager(ws.config())
    try:
        taken = Deliveries(m).last_acknowledged(session_of(ws, claude).id)
        assert taken is not None
        return taken
    finally:
        m.close()


def epochs(block: str) -> tuple[str, str]:
    found = re.search(r'from_epoch="(\d+)" to_epoch="(\d+)"', block)
    assert found, block
    return found.group(1), found.group(2)


# --- 1. the project is pinned per Claude session ---------------------------------------------


def test_a_cd_in_bash_does_not_switch_projects(two: Workspace, log: Path) -> None:
    claude = Claude(two, two.root / "notes")
    first = claude.prompt()
    assert MANIFEST in first and 'project="p"' in first
    claude.cwd = two.root / "other"  # the agent ran `cd ../other`
    two.write("notes/b.md", "# B\n")
    two.write("other/y.md", "# Y\n")
    told = claude.prompt()
    assert 'project="p"' in told and "notes/b.md" in told and "other/y.md" not in told
    claude.cwd = two.root.parent  # and then left the workspace altogether
    two.write("notes/c.md", "# C\n")
    assert "notes/c.md" in claude.prompt()
    assert claude.prompt() == ""  # nothing due, answered for the pinned session
    assert not log.exists()


def test_project_and_workspace_options_decide_where_claude_runs_elsewhere(
    two: Workspace, tmp_path: Path, log: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    workspace = ("--workspace", str(two.root))
    claude = Claude(two, outside, args=(*workspace, "hook", "claude-code"))
    assert claude.prompt() == ""  # Claude's folder is outside every project: logged
    assert "outside the workspace" in log.read_text(encoding="utf-8")
    pinned = Claude(two, outside, session="c0ffee-2",
                    args=(*workspace, "hook", "claude-code", "--project", "q"))
    told = pinned.prompt()
    assert 'project="q"' in told and "other/x.md" in told
    pinned.project_dir = pinned.cwd = two.root / "notes"
    two.write("other/y.md", "# Y\n")
    assert 'project="q"' in pinned.prompt()


# --- 3. printing is not delivery ----------------------------------------------------------------


def test_a_block_found_in_the_transcript_is_acknowledged(two: Workspace, log: Path) -> None:
    claude = Claude(two, two.root / "notes")
    first = claude.prompt()
    token = re.search(r'delivery="([0-9a-f]+)"', first)
    assert token
    assert claude.prompt() == ""  # found: nothing to tell
    s = session_of(two, claude)
    assert s.cursor is not None and not s.needs_manifest
    taken = last_taken(two, claude)
    assert taken.token == token.group(1) and taken.how is Acknowledgement.TRANSCRIPT


def test_dropped_context_is_delivered_again_with_its_epochs(two: Workspace, log: Path) -> None:
    claude = Claude(two, two.root / "notes")
    claude.prompt()
    two.write("notes/b.md", "# B\n")
    dropped = claude.prompt(keep=False)  # the harness dropped it; the model answered anyway
    assert "notes/b.md" in dropped
    again = claude.prompt()
    assert "notes/b.md" in again and epochs(again) == epochs(dropped)
    assert again != dropped  # a fresh token
    assert claude.prompt() == ""


def test_a_dropped_manifest_comes_again(two: Workspace, log: Path) -> None:
    claude = Claude(two, two.root / "notes")
    claude.prompt()
    dropped = claude.start("compact")
    assert MANIFEST in dropped
    assert claude.call("UserPromptSubmit", prompt="go") == ""  # it goes out with this one
    claude.answer()  # and the model answered without it
    assert MANIFEST in claude.prompt()


def test_a_preview_of_the_context_is_not_delivery(two: Workspace, log: Path) -> None:
    """Seen: with a 20,000-character hook budget Claude Code replaced the block by a 2 KB
    preview inside `<persisted-output>` (no closing tag of the block), and freshline
    counted it delivered because the token is in the block's opening tag."""
    claude = Claude(two, two.root / "notes")
    claude.prompt()
    two.write("notes/b.md", "# B\n")
    told = claude.call("UserPromptSubmit", prompt="go")
    claude.preview(told)
    claude.answer()
    again = claude.prompt()
    assert "notes/b.md" in again and epochs(again) == epochs(told)
    assert claude.prompt() == ""


def test_a_transcript_holding_no_hook_output_proves_nothing(two: Workspace, log: Path) -> None:
    """Seen: the Agent SDK inside claude-code-acp records no hook context in its
    transcript, so the hook never found its token and sent the manifest on every prompt."""
    claude = Claude(two, two.root / "notes")
    first = claude.prompt(keep=False)
    assert MANIFEST in first
    assert claude.prompt(keep=False) == ""  # taken as printed, not told again
    two.write("notes/b.md", "# B\n")
    told = claude.prompt(keep=False)
    assert UPDATES in told and MANIFEST not in told and "notes/b.md" in told
    assert claude.prompt(keep=False) == ""
    taken = last_taken(two, claude)
    assert taken.how is Acknowledgement.PRINTED
    assert taken.note and "records no hook output" in taken.note


def test_inside_an_agent_the_acp_proxy_runs_the_hook_stays_silent(
    two: Workspace, log: Path, service: Service
) -> None:
    """Seen: the hook and `freshline acp` both delivered to one conversation. The proxy
    marks the agent it starts; the hook then neither prints nor opens a session."""
    claude = Claude(two, two.root / "notes", env={"FRESHLINE_OWNER": "acp"})
    assert claude.start() == ""
    assert claude.prompt() == ""
    assert claude.call("PostToolUse", tool_name="Read",
                       tool_input={"file_path": str(two.root / "notes/a.md")},
                       tool_response={"type": "text"}) == ""
    assert session_of(two, claude) is None
    assert not log.exists()
    assert service.workspaces.listing() == []  # not even the service was asked


def test_an_error_entry_quoting_the_output_is_not_delivery(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes")
    told = claude.call("UserPromptSubmit", prompt="go")
    claude._append({"type": "attachment", "attachment": {
        "type": "hook_non_blocking_error", "stderr": f"Full stdout: {json.dumps(told)}"}})
    claude.answer()
    assert MANIFEST in claude.prompt()


def test_session_start_context_is_in_flight_until_the_prompt_goes_out(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes")
    start = claude.start()
    assert MANIFEST in start
    # Claude Code writes SessionStart's context only with the first prompt: the prompt's
    # hook must not tell the manifest twice.
    assert claude.call("UserPromptSubmit", prompt="go") == ""
    two.write("notes/b.md", "# B\n")
    claude.take(start, "SessionStart")
    claude.answer()
    told = claude.prompt()
    assert UPDATES in told and MANIFEST not in told and "notes/b.md" in told


def test_a_session_start_that_never_reached_a_prompt_is_told_again(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes")
    assert MANIFEST in claude.start()
    assert claude.call("SessionEnd", reason="prompt_input_exit") == ""
    assert MANIFEST in claude.start("resume")


def test_without_a_transcript_printing_is_delivery_and_session_show_says_so(
    two: Workspace,
) -> None:
    claude = Claude(two, two.root / "notes", transcript=False)
    assert MANIFEST in claude.call("UserPromptSubmit", prompt="go")
    assert claude.call("UserPromptSubmit", prompt="go") == ""
    s = session_of(two, claude)
    shown = subprocess.run(
        [sys.executable, "-m", "freshline", "--workspace", str(two.root), "session", "show",
         s.id], capture_output=True, text=True, timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "acknowledged when printed" in shown.stdout
    assert "names no transcript" in shown.stdout


def test_an_unreadable_transcript_falls_back_to_printing(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes")
    claude.call("UserPromptSubmit", prompt="go")  # the transcript file never appears
    assert claude.call("UserPromptSubmit", prompt="go") == ""
    taken = last_taken(two, claude)
    assert taken.how is Acknowledgement.PRINTED
    assert taken.note and "no readable transcript" in taken.note


# --- 4. SessionStart sources and SessionEnd ---------------------------------------------------


@pytest.mark.parametrize("source", ["compact", "clear"])
def test_compact_and_clear_deliver_the_manifest_without_the_closed_note(
    two: Workspace, source: str
) -> None:
    claude = Claude(two, two.root / "notes")
    claude.prompt()
    again = claude.start(source)
    assert MANIFEST in again and RESUMED not in again and "notes/a.md" in again
    claude.take(again, "SessionStart")
    assert claude.prompt() == ""


def test_session_end_closes_and_resume_tells_only_what_changed(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes")
    claude.prompt()
    assert claude.call("SessionEnd", reason="other") == ""
    assert session_of(two, claude).state is SessionState.CLOSED
    two.write("notes/b.md", "# B\n")
    resumed = claude.start("resume")
    assert UPDATES in resumed and MANIFEST not in resumed and "notes/b.md" in resumed
    assert "notes/a.md" not in resumed
    assert session_of(two, claude).state is SessionState.ACTIVE


def test_session_list_shows_the_claude_session(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes", session="7eacfd42-5faf-4092")
    claude.prompt()
    listed = subprocess.run(
        [sys.executable, "-m", "freshline", "--workspace", str(two.root), "session", "list",
         "--json"], capture_output=True, text=True, timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["agent_session"] == "claude-code 7eacfd42-5faf-4092"
    human = subprocess.run(
        [sys.executable, "-m", "freshline", "--workspace", str(two.root), "session", "list"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"},
    )
    assert row["title"] == "go"  # its first prompt, as `log` shows it
    assert "claude-code" in human.stdout and row["title"] in human.stdout


def test_post_tool_use_prints_nothing_and_settles_what_went_out(two: Workspace) -> None:
    claude = Claude(two, two.root / "notes")
    told = claude.call("UserPromptSubmit", prompt="go")
    claude.take(told)
    assert claude.call("PostToolUse", tool_name="Read",
                       tool_input={"file_path": str(two.root / "notes/a.md")},
                       tool_response={"type": "text"}) == ""
    assert not session_of(two, claude).needs_manifest  # acknowledged at PostToolUse


def test_a_tool_call_before_the_transcript_caught_up_leaves_the_prompts_context_in_flight(
    two: Workspace,
) -> None:
    """Seen with the real Claude Code: it writes its transcript every 100 ms, and a
    PostToolUse that came sooner (a fast model) found neither the prompt's context nor
    an answer in it; the delivery was given up and told again with the next prompt."""
    claude = Claude(two, two.root / "notes")
    two.write("notes/b.md", "# B\n")
    claude.prompt()
    two.write("notes/c.md", "# C\n")
    told = claude.call("UserPromptSubmit", prompt="go")
    assert "notes/c.md" in told
    for event in ("PostToolUse", "Stop"):  # the transcript not written yet
        claude.call(event, tool_name="Read", tool_input={"file_path": str(two.root / "x")},
                    tool_response={"type": "text"})
    claude.take(told)  # then Claude Code writes it, and the model's answer
    claude.answer()
    assert claude.call("UserPromptSubmit", prompt="again") == ""  # told once
    assert last_taken(two, claude).how is Acknowledgement.TRANSCRIPT


# --- 5. a hook session's prompts are checkpoints in freshline's own repository ----------------


@pytest.mark.parametrize("checkout", [True, False])
def test_a_hook_sessions_checkpoints_stay_out_of_the_users_repository(
    two: Workspace, checkout: bool
) -> None:
    if checkout:
        git(two.root, "init", "--quiet")
    claude = Claude(two, two.root / "notes")
    claude.prompt()
    two.write("notes/b.md", "# B\n")
    claude.prompt()
    if checkout:
        assert git(two.root, "for-each-ref", "refs/freshline") == ""
        assert git(two.root, "count-objects").startswith("0 objects")
    private = two.root / ".freshline" / "conversations.git"
    [ref] = git(private, "for-each-ref", "--format=%(refname)", "refs/freshline").split()
    tree = git(private, "ls-tree", "-r", "--name-only", ref).split()
    assert tree == ["notes/a.md", "notes/b.md"]  # the second prompt's files, in scope only
