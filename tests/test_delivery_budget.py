"""Every channel delivers blocks within its budget on a large generated workspace, counted
the way the channel delivers them, and each rolled-up block names the way to the rest.

Seen with the real Claude Code CLI: hook output over 10,000 characters is saved to a file
and the model sees a 2 KB preview, without the closing tag. `claude_code_sees` models that
rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from freshline.agent import Toolbox, ToolCall, ToolMode
from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import CHANNEL_BUDGETS, DeliverySettings, load_config
from freshline.context import Channel
from freshline.errors import ConfigError, UsageError
from freshline.interfaces.mcp.service import FreshlineService
from freshline.interfaces.tui.commands import Command, Invocation, run
from freshline.session import SessionManager
from tests.conftest import Workspace, git, hook_answer

CLAUDE_CODE_LIMIT = 10_000  # characters of hook output shown whole
CLAUDE_CODE_PREVIEW = 2_000  # what the model sees of a longer one
NEW = 800  # notes created at once: more than every budget below holds listed one by one
CLOSE_MANIFEST = "</project_context>"
CLOSE_UPDATES = "</project_context_updates>"
FOLDERS = [f"notes/{y}/{m:02}" for y in (2023, 2024) for m in range(1, 13)] + \
          [f"projects/p{i:02}" for i in range(16)]


def claude_code_sees(stdout: str) -> str:
    """What Claude Code's model gets of a hook's output: the whole additional context up to
    its limit, else a preview of its start (the rest goes to a file it is not shown)."""
    if not stdout:
        return ""
    context: str = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return context if len(context) <= CLAUDE_CODE_LIMIT else context[:CLAUDE_CODE_PREVIEW]


def write_notes(ws: Workspace, count: int, prefix: str = "note") -> None:
    for i in range(count):
        ws.write(f"{FOLDERS[i % len(FOLDERS)]}/{prefix} {i:04}.md", f"# {prefix} {i}\n")


def delivery(ws: Workspace, **budgets: int) -> None:
    """Add a `[delivery]` table to the workspace's config."""
    lines = "".join(f"{key} = {value}\n" for key, value in budgets.items())
    with (ws.root / "freshline.toml").open("a", encoding="utf-8") as handle:
        handle.write(f"\n[delivery]\n{lines}")


@pytest.fixture
def big(ws: Workspace) -> Iterator[Workspace]:
    """A project of 400 notes in 40 folders (about 30,000 characters listed whole)."""
    write_notes(ws, 400)
    ws.configure({"notes": {"include": ["notes", "projects"]}}, change_log_cap=10_000)
    yield ws


def hook_call(ws: Workspace, session: str = "claude-1") -> str:
    return hook_answer(ws.root / "notes", session)


def test_a_2000_path_checkout_through_the_hook_names_its_folders(ws: Workspace) -> None:
    """Seen: a 2,000-path `git checkout` through the Claude Code hook was one line naming
    none of its 20 folders, with 8,400 of the hook's 9,000 characters unused."""
    commits = []
    for n, branch in enumerate(("main", "topic")):  # two versions of 2,000 files in 20 folders
        commits.append(f"commit refs/heads/{branch}\ncommitter t <t@t> {n} +0000\n"
                       f"data {len(branch)}\n{branch}\n")
        for i in range(2_000):
            data = f"# {branch} {i}\n"
            commits.append(f"M 100644 inline src/area{i % 20:02}/module/file {i:04}.py\n"
                           f"data {len(data)}\n{data}")
        commits.append("\n")
    git(ws.root, "init", "-q", "-b", "main")
    git(ws.root, "fast-import", "--quiet", input="".join(commits).encode())
    git(ws.root, "reset", "-q", "--hard")
    ws.configure({"code": {"include": ["src"]}})
    assert hook_answer(ws.root)  # the manifest
    git(ws.root, "checkout", "-q", "topic")
    out = hook_answer(ws.root)
    assert 0 < len(out) <= CHANNEL_BUDGETS["hook"]
    seen = claude_code_sees(out)
    assert "by checkout: 2,000 paths in this project" in seen
    named = [f for f in range(20) if f"{ws.root}/src/area{f:02}/" in seen]
    assert len(named) >= 18, seen


@pytest.mark.parametrize("hook_budget", [None, 4_000])
def test_the_hook_stays_within_budget_and_claude_code_sees_the_closing_tags(
    big: Workspace, hook_budget: int | None,
) -> None:
    if hook_budget:
        delivery(big, hook=hook_budget)
    budget = hook_budget or CHANNEL_BUDGETS["hook"]
    first = hook_call(big)  # the manifest of 400 files
    assert 0 < len(first) <= budget
    assert CLOSE_MANIFEST in claude_code_sees(first)
    write_notes(big, NEW, prefix="new")  # 800 created notes: about 50,000 characters
    second = hook_call(big)
    assert len(second) <= budget
    seen = claude_code_sees(second)
    assert seen.endswith(CLOSE_UPDATES)
    assert "Changes grouped by folder (counts by kind):" in seen
    assert " changes notes --since 0 --channel hook --page 1` for the full list, a page at " \
        "a time; add `--folder FOLDER` for one folder's." in seen
    assert hook_call(big) == ""  # delivered: the cursor covers the rolled-up epochs


def test_a_hook_budget_claude_code_would_show_as_a_preview_is_refused(big: Workspace) -> None:
    """Seen: `[delivery] hook = 20000` was accepted, and Claude Code showed the model a
    2 KB preview of the block, without its closing tag (as `claude_code_sees` plays it)."""
    hook_call(big)
    write_notes(big, NEW, prefix="new")
    config = big.root / "freshline.toml"
    before = config.read_text(encoding="utf-8")
    delivery(big, hook=20_000)
    with pytest.raises(ConfigError, match="delivery.hook: at most 9,000 characters"):
        hook_call(big)
    config.write_text(before, encoding="utf-8")
    delivery(big, budget_chars=20_000)  # for every channel: the hook's stays at its ceiling
    seen = claude_code_sees(hook_call(big))
    assert seen.endswith(CLOSE_UPDATES)


def test_mcp_results_stay_within_budget(big: Workspace) -> None:
    budget = CHANNEL_BUDGETS["mcp"]
    service = FreshlineService(load_config(big.root))
    try:
        session = service.open_session("notes").session
        first = service.project_updates(session)
        assert first.blocks and CLOSE_MANIFEST in first.blocks
        assert len(first.text) <= budget  # the text content the client passes on
        assert first.token is not None
        service.acknowledge(session, first.token)
        write_notes(big, NEW, prefix="new")
        second = service.project_updates(session)
        assert second.blocks is not None and second.blocks.endswith(CLOSE_UPDATES)
        assert len(second.text) <= budget
        assert f'project_changes(session="{session}", since=0, page=1)' in second.blocks
        page = service.project_changes(session, 0, 1)
        assert page.pages > 1 and len(page.text) <= budget
        listed = [service.project_changes(session, 0, n).text for n in range(1, page.pages + 1)]
        for i in range(NEW):
            name = f"new {i:04}.md"
            assert any(name in text for text in listed), name
        manifest = service.project_manifest("notes")
        assert len(manifest) <= budget and manifest.endswith(CLOSE_MANIFEST)
        assert 'project_files(project="notes", page=1)' in manifest  # rolled up to fit
    finally:
        service.close()


@pytest.fixture
def manager(big: Workspace) -> Iterator[SessionManager]:
    delivery(big, chat=3_000, send=6_000, acp=2_500)
    m = SessionManager(load_config(big.root))
    yield m
    m.close()


def test_built_in_channels_stay_within_budget_and_page_the_rest(
    big: Workspace, manager: SessionManager,
) -> None:
    sessions = {}
    for channel in (Channel.SEND, Channel.ACP, Channel.CHAT):
        sessions[channel] = manager.new("notes", channel=channel).id
        manager.prepare(sessions[channel], "hi", channel=channel).accept()
    chat = sessions[Channel.CHAT]
    write_notes(big, NEW, prefix="new")
    big.write("notes/2024/01/note 0000.md", "# edited\n")

    result = send(manager, sessions[Channel.SEND], "what changed?", get_backend("echo"))
    blocks = result.wire_prompt.removesuffix("what changed?").rstrip()
    assert len(blocks) <= 6_000 and blocks.endswith(CLOSE_UPDATES)
    assert "page the full list with the changes tool (since=0)" in blocks
    turn = manager.prepare(sessions[Channel.ACP], "hi", channel=Channel.ACP)
    assert turn.updates is not None and len(turn.updates) <= 2_500

    reply = run(manager, chat, Invocation(Command.UPDATES))
    assert reply.title == f"updates (the next send will deliver; {len(reply.body):,} of 3,000 " \
                          "characters)"
    assert reply.body.endswith(CLOSE_UPDATES)
    sent = send(manager, chat, "hi", get_backend("echo"), channel=Channel.CHAT)
    assert sent.wire_prompt == f"{reply.body}\n\nhi"  # /updates showed what was sent


def test_manifest_and_updates_together_fit_one_budget(
    big: Workspace, manager: SessionManager,
) -> None:
    s = manager.new("notes")
    manager.prepare(s.id, "hi").accept()
    manager.close_session(s.id)
    manager.resume(s.id)  # its manifest is delivered on the next send
    write_notes(big, NEW, prefix="new")
    turn = manager.prepare(s.id, "hi", channel=Channel.SEND)
    assert turn.manifest is not None and turn.updates is not None
    blocks = f"{turn.manifest}\n\n{turn.updates}"
    assert len(blocks) <= 6_000
    assert turn.manifest.endswith(CLOSE_MANIFEST) and turn.updates.endswith(CLOSE_UPDATES)
    assert turn.covers == manager.tracker.epoch("notes")  # rolled up, still covers it all


def test_the_changes_tool_pages_the_full_list(big: Workspace, manager: SessionManager,
                                               tmp_path: Path) -> None:
    s = manager.new("notes")
    manager.prepare(s.id, "hi").accept()
    write_notes(big, 300, prefix="new")
    script = tmp_path / "script.json"
    calls = [{"tool": "changes", "args": {"since": 0, "page": n}} for n in (1, 2, 99)]
    script.write_text(json.dumps({"turns": [[*calls, {"say": "done"}]]}), encoding="utf-8")
    result = send(manager, s.id, "what changed?", get_backend(f"scripted:{script}"))
    results: list[Any] = [e for e in result.events if e.extra.get("tool") == "changes"]
    assert results[0].content.startswith("Changes to notes after epoch 0 (up to epoch 1), page 1")
    assert "- " + str(big.root / "notes/2023/01/new 0000.md") in results[0].content
    assert "page 2 of " in results[1].content.split("\n")[0]
    assert "page 99 does not exist" in results[2].content


@pytest.mark.parametrize(("args", "error"), [
    ({"since": -1}, "since must be at least 0 and page at least 1"),
    ({"page": 0}, "since must be at least 0 and page at least 1"),
    ({"page": "two"}, "argument 'page' must be a int"),
    ({"page": 7}, "page 7 does not exist"),
])
def test_the_changes_tool_refuses_bad_arguments(tmp_path: Path, args: dict[str, Any],
                                                error: str) -> None:
    def pager(since: int | None, page: int, most: int) -> str:
        if page > 1:
            raise UsageError(f"page {page} does not exist: the changes fill 1 page(s)")
        return f"since {since}, page {page}, at most {most}"

    box = Toolbox(tmp_path, ToolMode.ISOLATED, changes=pager, output_cap=5_000)
    assert "changes" in {spec.name for spec in box.specs()}
    assert box.run(ToolCall("c1", "changes", {})).content == "since None, page 1, at most 5000"
    result = box.run(ToolCall("c2", "changes", args))
    assert result.is_error and result.content.startswith("changes: ") and error in result.content
    assert "changes" not in {spec.name for spec in Toolbox(tmp_path).specs()}


# ---------------------------------------------------------------- config

def test_budgets_by_channel() -> None:
    assert DeliverySettings().budget("hook") == 9_000
    assert DeliverySettings().budget("mcp") == 20_000
    every = DeliverySettings(budget_chars=50_000)
    assert every.budget("chat") == 50_000 and every.budget("hook") == 9_000  # its ceiling
    assert DeliverySettings(budget_chars=4_000).budget("hook") == 4_000
    assert DeliverySettings(budget_chars=4_000, hook=12_000).budget("hook") == 12_000


@pytest.mark.parametrize(("table", "error"), [
    ("hook = 500", "delivery.hook: must be between 2,000 and 10,000,000 characters, got 500"),
    ("mcp = 99999999999", "delivery.mcp: must be between 2,000 and 10,000,000 characters"),
    ('chat = "big"', "delivery.chat: expected an integer (characters), got a string"),
    ("hooks = 3000", "delivery.hooks: unknown key (expected one of: budget_chars, hook, mcp, "
                     "chat, send, acp)"),
    ("budget_chars = true", "delivery.budget_chars: expected an integer (characters), got a "
                            "boolean"),
])
def test_bad_delivery_settings_are_one_line_errors(ws: Workspace, table: str, error: str) -> None:
    ws.configure({})
    with (ws.root / "freshline.toml").open("a", encoding="utf-8") as handle:
        handle.write(f"\n[delivery]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_config(ws.root)
    assert str(info.value).startswith(f"freshline.toml: {error}")
    assert "\n" not in str(info.value)
