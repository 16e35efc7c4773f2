"""The Gemini CLI and Codex CLI hooks, answered in this process (`hook.core.answer`): their
payloads in, their JSON out, delivery proven from a transcript written in each client's
format (as Gemini CLI 0.61 and Codex CLI 0.171 write them, seen offline), the fallback
when a transcript records no hook output, and Codex's truncation counted as not
delivered. The real clients run in tests/integration/test_gemini_cli.py and test_codex.py.
"""

from __future__ import annotations

import json
import re
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.errors import UsageError
from freshline.interfaces.cli import app
from freshline.interfaces.hook import adapter
from freshline.interfaces.hook.core import Warm, answer
from freshline.interfaces.hook.payload import call_key
from freshline.interfaces.hook.protocol import Adapter, HookOptions, Phase, ToolUse
from freshline.session import SessionManager
from freshline.session.evidence import Moment
from freshline.session.transcripts.codex import TRUNCATED
from freshline.store import LedgerKind
from tests.conftest import Workspace
from tests.test_listing_clock import wall_clock

MANIFEST = "<project_context "
UPDATES = "<project_context_updates"
PROMPT_EVENT = {"gemini-cli": "BeforeAgent", "codex": "UserPromptSubmit"}
TOOL_EVENT = {"gemini-cli": "AfterTool", "codex": "PostToolUse"}
_ids = count()


class Client:
    """One session of an agent's client driving the hook in-process, writing the transcript
    its client writes."""

    def __init__(self, agent: str, ws: Workspace, cwd: Path, transcript: bool = True) -> None:
        self.adapter: Adapter = adapter(agent)
        self.ws, self.cwd = ws, cwd
        self.session = f"{agent}-{next(_ids)}"
        folder = ws.root.parent / f"{agent}-home"
        folder.mkdir(exist_ok=True)
        self.transcript = folder / f"{self.session}.jsonl" if transcript else None

    def call(self, event: str, **fields: Any) -> str:
        """One hook call; the additional context it printed ("" for none)."""
        data = {"session_id": self.session, "cwd": str(self.cwd), "hook_event_name": event,
                **fields}
        if self.transcript is not None:
            data["transcript_path"] = str(self.transcript)
        warm = Warm()
        try:
            text = answer(self.adapter, json.dumps(data), HookOptions(), warm).text
        finally:
            warm.close()
        if not text:
            return ""
        assert text.endswith("\n") and text.isascii()
        out = json.loads(text)["hookSpecificOutput"]
        assert out["hookEventName"] == event
        context: str = out["additionalContext"]
        return context

    def write(self, *entries: dict[str, Any]) -> None:
        if self.transcript is not None:
            with self.transcript.open("a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(e) + "\n" for e in entries)

    def prompt(self, keep: bool = True, truncate: bool = False) -> str:
        """A whole turn: the prompt's hook context goes out (kept, dropped, or truncated as
        Codex truncates), the model answers."""
        told = self.call(PROMPT_EVENT[self.adapter.name], prompt="go")
        if self.adapter.name == "gemini-cli":
            self.write(gemini_user("go", told if keep else ""), {"type": "gemini", "content": "ok"})
        else:
            shown = truncated(told) if truncate else told
            self.write(*([codex_hook(shown)] if keep and told else []), codex_assistant())
        return told


def gemini_user(prompt: str, context: str) -> dict[str, Any]:
    """Gemini CLI's user message: the prompt, then BeforeAgent's context as a part (its
    `<` and `>` escaped, as Gemini CLI 0.61 gives them to the model)."""
    parts = [{"text": prompt}]
    if context:
        escaped = context.replace("<", "&lt;").replace(">", "&gt;")
        parts.append({"text": f"<hook_context>{escaped}</hook_context>"})
    return {"id": "u", "type": "user", "content": parts, "displayContent": [{"text": prompt}]}


def codex_hook(text: str) -> dict[str, Any]:
    """Codex's developer message holding a hook's additional context."""
    meta = {"content_item_kinds": ["hooks.additional_context"],
            "content_item_metadata": [{"provenance": {"type": "harness", "hook": True}}]}
    return {"type": "response_item", "payload": {
        "type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}],
        "internal_chat_message_metadata_passthrough": meta}}


def codex_assistant() -> dict[str, Any]:
    return {"type": "response_item", "payload": {
        "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}]}}


def truncated(context: str) -> str:
    """What Codex 0.171 gives the model for context over its limit: head and tail."""
    return (f"{TRUNCATED} (original token count: {len(context) // 4})\nTotal output lines: 1"
            f"\n\n{context[:60]}…{context[-60:]}\n\nFull hook output saved to: /tmp/h/1.txt")


@pytest.fixture(autouse=True)
def log(hook_log: Path) -> Path:
    return hook_log


@pytest.fixture(params=["gemini-cli", "codex"])
def agent(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def epochs(block: str) -> tuple[str, str]:
    found = re.search(r'from_epoch="(\d+)" to_epoch="(\d+)"', block)
    assert found, block
    return found.group(1), found.group(2)


# --- payloads ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("agent_name", "event", "moment"), [
    ("gemini-cli", "BeforeAgent", Moment.PROMPT),
    ("gemini-cli", "BeforeTool", Moment.TOOL),
    ("gemini-cli", "AfterTool", Moment.TOOL),
    ("gemini-cli", "AfterAgent", Moment.STOP),
    ("gemini-cli", "PreCompress", Moment.COMPACT),
    ("gemini-cli", "SessionEnd", Moment.END),
    ("codex", "SessionStart", Moment.START),
    ("codex", "UserPromptSubmit", Moment.PROMPT),
    ("codex", "PreToolUse", Moment.TOOL),
    ("codex", "PostToolUse", Moment.TOOL),
    ("codex", "Stop", Moment.STOP),
    ("codex", "SessionEnd", Moment.END),
])
def test_each_event_maps_to_its_moment(agent_name: str, event: str, moment: Moment) -> None:
    data = {"hook_event_name": event, "session_id": "s1", "cwd": "/w", "tool_name": "x",
            "transcript_path": "/h/t.jsonl"}
    call = adapter(agent_name).parse(json.dumps(data))
    assert call.moment is moment and call.event == event and call.transcript == Path("/h/t.jsonl")


@pytest.mark.parametrize(("agent_name", "event"), [
    ("gemini-cli", "SessionStart"),  # not answered: its context breaks Gemini's --resume
    ("codex", "SubagentStop"),
    ("gemini-cli", "UserPromptSubmit"),
])
def test_events_it_does_not_answer_are_refused(agent_name: str, event: str) -> None:
    data = {"hook_event_name": event, "session_id": "s1", "cwd": "/w"}
    with pytest.raises(UsageError, match="unsupported hook event"):
        adapter(agent_name).parse(json.dumps(data))


@pytest.mark.parametrize(("tool", "fields", "response", "expected"), [
    ("read_file", {"file_path": "/w/a.md"}, {}, ToolUse(("/w/a.md",), LedgerKind.READ)),
    ("read_file", {"absolute_path": "/w/a.md"}, {}, ToolUse(("/w/a.md",), LedgerKind.READ)),
    ("write_file", {"file_path": "b.md", "content": "x"}, {},
     ToolUse(("b.md",), LedgerKind.WRITE)),
    ("replace", {"file_path": "/w/a.md"}, {}, ToolUse(("/w/a.md",), LedgerKind.WRITE)),
    ("replace", {"file_path": "/w/a.md"}, {"error": "no match"}, ToolUse(("/w/a.md",), None)),
    ("run_shell_command", {"command": "cat a.md"}, {},
     ToolUse((), None, window=call_key({"tool_name": "run_shell_command",
                                         "tool_input": {"command": "cat a.md"}}))),
])
def test_gemini_tools_feed_the_ledger(
    tool: str, fields: dict[str, Any], response: dict[str, Any], expected: ToolUse
) -> None:
    data = {"hook_event_name": "AfterTool", "session_id": "s", "cwd": "/w", "tool_name": tool,
            "tool_input": fields, "tool_response": response}
    assert adapter("gemini-cli").parse(json.dumps(data)).tool == expected


PATCH = "*** Begin Patch\n*** Update File: notes/a.md\n@@\n-# A\n+# A2\n*** End Patch\n"
MANY = ("*** Begin Patch\n*** Add File: notes/p1.md\n+one\n*** Update File: notes/a.md\n"
        "*** Move to: notes/moved.md\n@@\n-# A\n+# A2\n*** Delete File: notes/old.md\n"
        "*** End Patch\n")


@pytest.mark.parametrize(("fields", "paths", "kind"), [
    ({"command": PATCH}, ("notes/a.md",), LedgerKind.WRITE),
    ({"input": PATCH.replace("Update", "Add")}, ("notes/a.md",), LedgerKind.WRITE),
    ({"command": MANY}, ("notes/p1.md", "notes/a.md", "notes/moved.md", "notes/old.md"),
     LedgerKind.WRITE),
    ({"command": "cat notes/a.md"}, (), None),
])
def test_codex_patches_are_writes_of_every_file_they_name(
    fields: dict[str, Any], paths: tuple[str, ...], kind: LedgerKind | None
) -> None:
    """Every file of a multi-file patch (only the first was before), and the patch's own
    window: what changed while it ran is its too."""
    data = {"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/w",
            "tool_name": "apply_patch", "tool_input": fields, "tool_use_id": "call_2"}
    assert adapter("codex").parse(json.dumps(data)).tool == ToolUse(paths, kind, "call_2")


@pytest.mark.parametrize(("agent_name", "start", "end", "tool", "key"), [
    ("claude-code", "PreToolUse", "PostToolUse", "Bash", "toolu_1"),
    ("codex", "PreToolUse", "PostToolUse", "Bash", "toolu_1"),
    ("codex", "PreToolUse", "PostToolUse", "apply_patch", "toolu_1"),
    ("gemini-cli", "BeforeTool", "AfterTool", "run_shell_command", None),
])
def test_a_shells_start_and_end_share_its_window(
    agent_name: str, start: str, end: str, tool: str, key: str | None
) -> None:
    """A shell names no file: its start and its end are tied by the call's id, or (Gemini
    CLI gives none) by its name and input."""
    data = {"session_id": "s", "cwd": "/w", "tool_name": tool, "tool_input": {"command": "x"}}
    if key is not None:
        data["tool_use_id"] = key
    began = adapter(agent_name).parse(json.dumps({**data, "hook_event_name": start})).tool
    ended = adapter(agent_name).parse(json.dumps({**data, "hook_event_name": end})).tool
    assert began is not None and ended is not None
    assert (began.phase, ended.phase) == (Phase.START, Phase.END)
    assert began.window == ended.window == (key or call_key(data))


# --- delivery -------------------------------------------------------------------------------


def test_the_manifest_then_only_what_changed(agent: str, two_projects: Workspace) -> None:
    client = Client(agent, two_projects, two_projects.root / "notes")
    first = client.prompt()
    assert MANIFEST in first and 'project="p"' in first and "notes/a.md" in first
    assert client.prompt() == ""  # found in the transcript: nothing more to tell
    two_projects.write("notes/b.md", "# B\n")
    told = client.prompt()
    assert UPDATES in told and MANIFEST not in told and "notes/b.md" in told
    assert client.prompt() == ""


def test_session_list_tells_the_agents_apart(two_projects: Workspace) -> None:
    """Seen: Claude Code, Gemini CLI and Codex sessions all listed on channel `hook`, the
    Gemini and Codex ones without a title, an unused session as `landing`."""
    prompts = {"claude-code": "UserPromptSubmit", **PROMPT_EVENT}
    for name, event in prompts.items():
        client = Client(name, two_projects, two_projects.root / "notes")
        client.call(event, prompt=f"what is new, {name}?\nsecond line")
        client.call(event, prompt="a later prompt")  # the first one titles the session
    manager = SessionManager(two_projects.config())
    try:
        unused = manager.new("q").id
    finally:
        manager.close()
    listed = CliRunner().invoke(app, ["-w", str(two_projects.root), "session", "list",
                                      "--json"])
    rows = {row["agent"]: row for row in json.loads(listed.stdout)}
    assert {agent: (row["channel"], row["title"]) for agent, row in rows.items()} == {
        "claude-code": ("hook", "what is new, claude-code?"),
        "gemini-cli": ("hook", "what is new, gemini-cli?"),
        "codex": ("hook", "what is new, codex?"),
        "send": ("send", None),
    }
    table = CliRunner().invoke(app, ["-w", str(two_projects.root), "session", "list"]).stdout
    header, *lines = table.splitlines()
    assert header.split()[:4] == ["id", "project", "agent", "state"]
    assert [line.split()[2:4] for line in lines] == [
        ["claude-code", "active"], ["gemini-cli", "active"], ["codex", "active"],
        ["send", "new"]]
    assert unused in lines[-1] and "landing" not in table


def test_dropped_context_is_told_again(agent: str, two_projects: Workspace) -> None:
    client = Client(agent, two_projects, two_projects.root / "notes")
    client.prompt()
    client.prompt()  # a turn with nothing to tell: the transcript has hook output before
    two_projects.write("notes/b.md", "# B\n")
    dropped = client.prompt(keep=False)
    again = client.prompt()
    assert "notes/b.md" in again and epochs(again) == epochs(dropped)
    assert client.prompt() == ""


def test_codex_truncated_context_is_not_delivered(two_projects: Workspace) -> None:
    """Seen: Codex 0.171 replaced context over its limit by a head-and-tail excerpt: the
    token in the block's opening tag survives in the head, yet the model lost the middle."""
    client = Client("codex", two_projects, two_projects.root / "notes")
    client.prompt()
    two_projects.write("notes/b.md", "# B\n")
    cut = client.prompt(truncate=True)
    again = client.prompt()
    assert "notes/b.md" in again and epochs(again) == epochs(cut)
    assert client.prompt() == ""


def test_a_transcript_with_no_hook_output_proves_nothing(
    agent: str, two_projects: Workspace
) -> None:
    """A client that records no hook context (a Gemini hook that timed out records
    nothing): what was printed counts as delivered, not told on every prompt."""
    client = Client(agent, two_projects, two_projects.root / "notes")
    assert MANIFEST in client.prompt(keep=False)
    assert client.prompt(keep=False) == ""
    two_projects.write("notes/b.md", "# B\n")
    told = client.prompt(keep=False)
    assert UPDATES in told and "notes/b.md" in told
    assert client.prompt(keep=False) == ""


def test_codex_context_stays_within_its_limit(two_projects: Workspace) -> None:
    for i in range(400):
        two_projects.write(f"notes/deep/folder-{i % 40}/a-rather-long-file-name-{i}.md", "x\n")
    client = Client("codex", two_projects, two_projects.root / "notes")
    told = client.prompt()
    assert MANIFEST in told and len(told.encode()) <= 9_000 < 10_017


def test_codex_session_start_then_prompt(
    two_projects: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SessionStart's context goes out with the first prompt (in flight until then).
    SessionStart lists the files with the wall clock a second behind the file system's:
    a.md, written just before, is no change (a guess at the clocks' skew once told it)."""
    client = Client("codex", two_projects, two_projects.root / "notes")
    with wall_clock(monkeypatch, -1_000_000_000):
        started = client.call("SessionStart", source="startup")
    assert MANIFEST in started
    client.write(codex_hook(started))
    assert client.prompt() == ""
    assert client.call("SessionEnd", reason="exit") == ""
    two_projects.write("notes/b.md", "# B\n")
    resumed = client.call("SessionStart", source="resume")  # the closed session reopens
    assert UPDATES in resumed and "notes/b.md" in resumed


def test_tools_feed_the_read_ledger(agent: str, two_projects: Workspace) -> None:
    client = Client(agent, two_projects, two_projects.root / "notes")
    client.prompt()
    if agent == "gemini-cli":
        fields = {"tool_name": "write_file", "tool_input": {"file_path": "a.md"}}
    else:
        fields = {"tool_name": "apply_patch",
                  "tool_input": {"command": PATCH.replace("notes/", "")}}
    two_projects.write("notes/a.md", "# A2\n")
    assert client.call(TOOL_EVENT[agent], **fields) == ""
    manager = SessionManager(two_projects.config())
    try:
        s = manager.store.session_by_external(client.adapter.external_id(client.session))
        assert s is not None
        assert [(e.path, e.kind) for e in manager.store.ledger_of(s.id)] == \
            [("notes/a.md", LedgerKind.WRITE)]
    finally:
        manager.close()


_INPUTS = st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(), max_size=3)


@given(st.text(min_size=1, max_size=10), _INPUTS, _INPUTS)
def test_a_calls_key_is_its_id_else_its_name_and_input(
    name: str, one: dict[str, Any], other: dict[str, Any]
) -> None:
    """A client without call ids ties a tool's end to its start by what it ran: the same
    call gets the same key whatever the key order, a different input another key."""
    same = call_key({"tool_name": name, "tool_input": one})
    reordered = dict(reversed(list(one.items())))
    assert call_key({"tool_name": name, "tool_input": reordered}) == same
    assert (call_key({"tool_name": name, "tool_input": other}) == same) is (one == other)
    assert call_key({"tool_name": name, "tool_input": one, "tool_use_id": "t9"}) == "t9"
