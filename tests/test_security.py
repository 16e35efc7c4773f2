"""Issue 13's "what was seen", end to end on real workspaces: secrets reach no model by any
channel, tools see the project (not the workspace), MCP stops following links out of it,
and hostile names, trees and paths get a clear answer instead of a crash."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.access import AccessDenied
from freshline.agent.backends import get_backend
from freshline.agent.messages import ToolCall
from freshline.agent.runtime import send, toolbox_for
from freshline.interfaces.cli import app
from freshline.interfaces.mcp.service import FreshlineService
from freshline.session import SessionManager
from freshline.store.records import Change, ChangeKind

from .conftest import Workspace, git, hook_answer

# The seven secrets of the report, each holding a value that must never come back.
SECRETS = {
    ".env": "API_KEY=tok-env",
    "id_rsa": "tok-rsa",
    "credentials.json": '{"key": "tok-cred"}',
    "server.pem": "tok-pem",
    ".aws/credentials": "tok-aws",
    ".npmrc": "tok-npm",
    ".netrc": "tok-netrc",
}
VALUE = "tok-"  # every value starts so; the search pattern below is VALUE + r"\w"


VALUES = ["tok-env", "tok-rsa", "tok-cred", "tok-pem", "tok-aws", "tok-npm", "tok-netrc",
          "tok-private", "tok-rotated", "tok-local", "tok-vendor"]


def leaked(text: str) -> bool:
    """Whether any secret value (not merely the search pattern) appears in `text`."""
    return any(value in text for value in VALUES)


@pytest.fixture
def vault(ws: Workspace) -> Workspace:
    for name, value in SECRETS.items():
        ws.write(f"notes/{name}", value + "\n")
    ws.write("notes/a.md", "alpha\n")
    ws.write("notes/private/p.md", f"{VALUE}private\n")
    ws.configure({"notes": {"include": ["notes"], "exclude": ["notes/private"]}})
    return ws


def script(tmp_path: Path, *turns: list[dict[str, object]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"scripted:{path}"


def reads(*paths: str) -> list[dict[str, object]]:
    return [{"tool": "read", "args": {"path": p}} for p in paths]


def conversation_text(root: Path, session: str) -> tuple[str, str]:
    """Every commit message of a conversation, and every path of every tree in it."""
    repo = root / ".freshline/conversations.git"
    ref = f"refs/freshline/conversations/{session}"
    messages = git(repo, "log", "--format=%B", ref)
    commits = git(repo, "rev-list", ref).split()
    names = "\n".join(git(repo, "ls-tree", "-r", "--name-only", c) for c in commits)
    return messages, names


def test_secrets_never_reach_a_model_by_any_channel(vault: Workspace, tmp_path: Path) -> None:
    root = vault.root
    runner = CliRunner()
    files = runner.invoke(app, ["--workspace", str(root), "project", "files", "notes", "--json"])
    assert json.loads(files.stdout) == ["notes/a.md"]

    manager = SessionManager(vault.config())
    try:
        s = manager.new("notes")
        probing = [{"tool": "list", "args": {"path": "notes"}},
                   *reads(*(f"notes/{n}" for n in SECRETS), "notes/private/p.md"),
                   {"tool": "search", "args": {"pattern": VALUE + r"\w"}},
                   {"say": "done"}]
        backend = get_backend(script(tmp_path, probing, [{"say": "again"}]))
        first = send(manager, s.id, "look around", backend)
        vault.write("notes/.env", "API_KEY=tok-rotated\n")
        vault.write("notes/.env.local", "tok-local\n")
        second = send(manager, s.id, "what changed?", backend)
    finally:
        manager.close()

    blocks = first.wire_prompt + second.wire_prompt
    results = [e.content for e in first.events if e.author.value == "tool"]
    assert len(results) == 10 and not any(leaked(r) for r in results)
    assert all("refused" in r for r in results[1:9])
    assert "a.md" in results[0] and ".env" not in results[0]
    messages, names = conversation_text(root, s.id)
    for name in [*SECRETS, ".env.local"]:
        assert f"notes/{name}" not in blocks
        assert f"notes/{name}\n" not in names + "\n"
    assert not leaked(blocks) and not leaked(messages)

    service = FreshlineService(vault.config())
    try:
        for name in SECRETS:
            with pytest.raises(AccessDenied, match="a secret"):
                service.read_document(f"notes/{name}")
        with pytest.raises(AccessDenied, match="not in project 'notes'"):
            service.read_document("notes/private/p.md", session=s.id)
    finally:
        service.close()

    out = hook_answer(root / "notes", "cc1")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "notes/a.md" in context
    assert not any(f"notes/{name}" in context for name in [*SECRETS, ".env.local"])


def test_a_project_that_opts_in_reads_only_what_it_named(vault: Workspace, tmp_path: Path) -> None:
    vault.configure({"notes": {"include": ["notes"], "allow_secrets": [".env"]}})
    manager = SessionManager(vault.config())
    try:
        s = manager.new("notes")
        assert "notes/.env" in s.manifest and "notes/id_rsa" not in s.manifest
        backend = get_backend(script(tmp_path, reads("notes/.env", "notes/id_rsa")))
        result = send(manager, s.id, "read", backend)
    finally:
        manager.close()
    env, rsa = (e.content for e in result.events if e.author.value == "tool")
    assert env == "API_KEY=tok-env\n" and "refused" in rsa and not leaked(rsa)


def test_mcp_read_document_judges_where_a_link_leads(vault: Workspace) -> None:
    root = vault.root
    git(root, "init", "--quiet")
    git(root, "config", "remote.origin.url", f"https://{VALUE}git@example.com/x")
    vault.write("notes/ignored.md", "x")
    for name, target in {"gitcfg": "../.git/config", "toml": "../freshline.toml",
                         "env": ".env", "out": "private/p.md"}.items():
        (root / "notes" / name).symlink_to(target)
    (root / "notes/ok").symlink_to("a.md")
    service = FreshlineService(vault.config())
    try:
        for name in ("gitcfg", "toml", "env", "out"):
            with pytest.raises(AccessDenied, match="where it leads"):
                service.read_document(f"notes/{name}")
        ok = service.read_document("notes/ok")
        assert ok.text == "alpha\n" and ok.path == "notes/a.md"
    finally:
        service.close()


def test_isolated_tools_refuse_excluded_and_secret_files_of_the_worktree(
    tmp_path: Path, ws: Workspace
) -> None:
    root = ws.root
    for name, value in SECRETS.items():
        ws.write(f"src/{name}", value + "\n")
    ws.write("src/a.py", "a = 1\n")
    ws.write("src/vendor/v.py", f"# {VALUE}vendor\n")
    ws.configure({"code": {"include": ["src"], "exclude": ["src/vendor"], "mode": "isolated"}})
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    manager = SessionManager(ws.config())
    try:
        s = manager.new("code")
        steps = [*reads(*(f"src/{n}" for n in SECRETS), "src/vendor/v.py", "src/a.py"),
                 {"tool": "write", "args": {"path": "src/.env", "content": "x"}},
                 {"tool": "search", "args": {"pattern": VALUE + r"\w"}}]
        result = send(manager, s.id, "go", get_backend(script(tmp_path, steps)))
        worktree = manager.conversations.worktree(s.id)
    finally:
        manager.close()
    outcomes = [e.content for e in result.events if e.author.value == "tool"]
    assert all("refused" in o for o in outcomes[:8]) and outcomes[8] == "a = 1\n"
    assert "refused" in outcomes[9] and (worktree / "src/.env").read_text() == "API_KEY=tok-env\n"
    assert outcomes[10].startswith("no matches")
    messages = git(root, "log", "--format=%B", f"refs/freshline/conversations/{s.id}")
    assert not leaked(messages)


def test_search_walks_a_very_deep_tree(ws: Workspace, tmp_path: Path) -> None:
    deep = str(ws.root / "notes")
    os.mkdir(deep)
    for _ in range(1200):  # seen: RecursionError from os.walk past ~1,000 levels
        deep += "/d"
        os.mkdir(deep)
    Path(deep, "bottom.md").write_text("found me\n")
    ws.write("notes/top.md", "found me too\n")
    ws.configure({"notes": {"include": ["notes"]}})
    manager = SessionManager(ws.config())
    try:
        s = manager.new("notes")
        steps = [{"tool": "search", "args": {"pattern": "found"}}]
        result = send(manager, s.id, "find", get_backend(script(tmp_path, steps)))
    finally:
        manager.close()
        Path(deep, "bottom.md").unlink()
        while deep != str(ws.root / "notes"):  # shutil.rmtree recurses: take it down here
            os.rmdir(deep)
            deep = os.path.dirname(deep)
    (hits,) = (e.content for e in result.events if e.author.value == "tool")
    assert "top.md:1: found me too" in hits and "bottom.md:1: found me" in hits


def test_a_lone_surrogate_path_is_refused_and_the_send_goes_on(
    code: tuple[SessionManager, Path], tmp_path: Path
) -> None:
    manager, root = code
    s = manager.new("code")
    raw = '{"turns": [[{"tool": "write", "args": {"path": "src/\\udc80x.py", "content": "x"}},' \
          ' {"tool": "read", "args": {"path": "src/\\udc81.py"}}, {"say": "ok \\udc82"}]]}'
    path = tmp_path / "script.json"
    path.write_text(raw)
    result = send(manager, s.id, "go", get_backend(f"scripted:{path}"))
    write, read = (e.content for e in result.events if e.author.value == "tool")
    assert "lone surrogate" in write and "refused" in write
    assert not list((manager.conversations.worktree(s.id) / "src").glob("*x.py"))
    log = manager.conversations.log(s.id)
    assert any("\\udc80x.py" in json.dumps(e.args) for e in log if e.args)
    assert log[-1].content == "ok \\udc82"


def test_the_snapshots_the_blocks_name_are_readable_and_no_others(
    ws: Workspace, tmp_path: Path
) -> None:
    ws.write("notes/paper.html", "<p>the paper says hello</p>")
    ws.write("other/x.html", f"<p>{VALUES[7]}</p>")
    ws.configure({"notes": {"include": ["notes"]}, "other": {"include": ["other"]}})
    manager = SessionManager(ws.config())
    try:
        manager.new("other")  # converts other/x.html: its snapshot exists too
        s = manager.new("notes")
        store = manager.materializer.store
        ours, theirs = store.snapshot_path("notes/paper.html"), store.snapshot_path("other/x.html")
        assert str(ours) in s.manifest and theirs.is_file()
        steps = reads(str(ours), str(theirs), ".freshline/snapshots")
        result = send(manager, s.id, "read", get_backend(script(tmp_path, steps)))
    finally:
        manager.close()
    mine, other, folder = (e.content for e in result.events if e.author.value == "tool")
    assert "the paper says hello" in mine
    assert "internal" in other and not leaked(other) and "internal" in folder


def test_a_log_written_before_the_deny_list_is_not_announced(vault: Workspace) -> None:
    manager = SessionManager(vault.config())
    try:
        s = manager.new("notes")
        send(manager, s.id, "first", get_backend("echo"))
        vault.write("notes/b.md", "b\n")
        state = manager.store.project_state("notes")
        assert state is not None
        old = [Change(ChangeKind.CREATED, "notes/.env"),  # as an older freshline logged them
               Change(ChangeKind.RENAMED, "notes/b.md", old_path="notes/id_rsa")]
        with manager.store.write():
            manager.store.log_append("notes", state.epoch + 1, old)
            manager.store.project_put(replace(state, epoch=state.epoch + 1))
        result = send(manager, s.id, "second", get_backend("echo"))
    finally:
        manager.close()
    assert f"{vault.root}/notes/b.md" in result.wire_prompt
    assert ".env" not in result.wire_prompt and "id_rsa" not in result.wire_prompt


def test_tools_refuse_what_the_workspace_ignore_files_ignore(ws: Workspace) -> None:
    """A .gitignored file is never in a project; a tool asked for it names the reason."""
    ws.write(".gitignore", "build/\n")
    ws.write("build/out.md", "generated\n")
    ws.write("notes/a.md", "alpha\n")
    ws.configure({"notes": {"include": ["*.md"]}})
    manager = SessionManager(ws.config())
    try:
        session = manager.new("notes")
        tools = toolbox_for(manager, session)
        result = tools.run(ToolCall("1", "read", {"path": "build/out.md"}))
        assert result.is_error and "ignore" in result.content
        assert "generated" not in result.content
    finally:
        manager.close()
