"""Any file name: bytes that are not UTF-8, newlines and tabs never break a scan, a manifest,
a send (live or isolated), a tool call or a git tree."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline import SessionManager, get_backend, send
from freshline.config import add_project, init_workspace, load_config
from freshline.conversation.events import Author, Event, decode, encode
from freshline.conversation.git import EMPTY_TREE, Git
from freshline.conversation.repository import repository_for
from freshline.interfaces.cli import app

from .conftest import git

NAMES = [b"caf\xe9.md", b"new\nline.md", b"tab\there.md", b"dir\nname/inner.md"]


def put(root: Path, rel: bytes, data: bytes = b"an odd name\n") -> str:
    """Write a file under a raw byte name; its workspace path as freshline spells it."""
    full = os.fsencode(str(root)) + b"/" + rel
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)
    return os.fsdecode(rel)


def tree_files(git_dir: Path, commit: str) -> dict[str, str]:
    """path → blob id of a commit's tree, read with NUL-separated plumbing."""
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit],
        capture_output=True, check=True,
    ).stdout
    files = {}
    for record in filter(None, out.split(b"\0")):
        meta, path = record.split(b"\t", 1)
        files[os.fsdecode(path)] = meta.split()[2].decode()
    return files


def script(tmp: Path, path: str) -> str:
    """A scripted model that lists, searches and reads the odd file on every turn."""
    turn = [
        {"tool": "list", "args": {"path": os.path.dirname(path)}},
        {"tool": "search", "args": {"pattern": "odd"}},
        {"tool": "read", "args": {"path": path}},
        {"say": "done"},
    ]
    target = tmp / "script.json"
    target.write_text(json.dumps({"turns": [turn] * 4}))
    return f"scripted:{target}"


@pytest.mark.parametrize("name", NAMES, ids=lambda n: repr(n)[2:-1])
def test_live_sessions_send_and_record_any_name(tmp_path: Path, name: bytes) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    put(root, b"notes/a.md", b"a\n")
    add_project(root, "notes", ["notes"])
    manager = SessionManager(load_config(root))
    try:
        older = manager.new("notes")  # existed before the file appeared
        send(manager, older.id, "hi", get_backend("echo"))
        path = put(root, b"notes/" + name)
        send(manager, older.id, "and now?", get_backend("echo"))
        newer = manager.new("notes")
        result = send(manager, newer.id, "look", get_backend(script(tmp_path, f"{root}/{path}")))
        tools = [e for e in result.events if "tool" in e.extra]
        assert [e.extra["tool"] for e in tools] == ["list", "search", "read"]
        assert not any(e.extra["is_error"] for e in tools), [e.content for e in tools]
        assert "an odd name" in tools[-1].content
        git_dir = repository_for(root)
        head = manager.conversations.head(newer.id)
        files = tree_files(git_dir, head)
        blob = git(root, "hash-object", "--no-filters", "--stdin", input=b"an odd name\n")
        assert files[path] == blob
    finally:
        manager.close()


@pytest.mark.parametrize("name", NAMES, ids=lambda n: repr(n)[2:-1])
def test_isolated_sessions_send_with_any_name(tmp_path: Path, name: bytes) -> None:
    root = tmp_path / "repo"
    init_workspace(root)
    put(root, b"notes/a.md", b"a\n")
    path = put(root, b"notes/" + name)
    add_project(root, "notes", ["notes"], mode="isolated")
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    manager = SessionManager(load_config(root))
    try:
        s = manager.new("notes")
        for message in ("look", "again"):
            # relative: the agent's tools are rooted at its worktree
            result = send(manager, s.id, message, get_backend(script(tmp_path, path)))
            assert not any(e.extra.get("is_error") for e in result.events)
        assert path in tree_files(root / ".git", manager.conversations.head(s.id))
    finally:
        manager.close()


def test_cli_output_names_odd_files_on_one_line(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    add_project(root, "notes", ["notes"])
    put(root, b"notes/a.md")
    runner = CliRunner()
    base = ["--workspace", str(root)]
    assert runner.invoke(app, [*base, "scan"]).exit_code == 0
    put(root, b"notes/caf\xe9.md")
    put(root, b"notes/new\nline.md")
    scanned = runner.invoke(app, [*base, "scan"])
    assert scanned.exit_code == 0
    assert "created   notes/caf\\xe9.md\n" in scanned.stdout
    assert "created   notes/new\\nline.md\n" in scanned.stdout
    listed = runner.invoke(app, [*base, "project", "files", "notes"])
    lines = listed.stdout.splitlines()
    assert lines[:3] == ["notes/a.md", "notes/caf\\xe9.md", "notes/new\\nline.md"]
    as_json = runner.invoke(app, [*base, "changes", "notes", "--since", "0", "--json"])
    assert {c["path"] for c in json.loads(as_json.stdout)["changes"]} == {
        "notes/caf\udce9.md", "notes/new\nline.md",
    }


def test_a_tool_call_naming_an_odd_file_is_recorded_and_read_back(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    Git().run("init", "--quiet", "--bare", str(repo))
    name = os.fsdecode(b"notes/caf\xe9\n.md")
    event = Event(Author.TOOL, f"read {name}", tool="read", args={"path": name})
    commit = Git(repo).commit_tree(EMPTY_TREE, [], encode(event))
    message = Git(repo).run("cat-file", "commit", commit).split(b"\n\n", 1)[1]
    assert decode(message.decode("utf-8")) == event


def test_a_name_as_a_block_shows_it_reads_the_file(tmp_path: Path) -> None:
    """Seen (issue 47 item 10): names holding a newline or bytes that are not UTF-8 were
    listed escaped but could not be read by that name, and a literal backslash made the
    escapes ambiguous. Each shown name now reads its own file, through the agent's tools,
    MCP read_document and `changes --folder`."""
    from freshline.context.wire import show
    from freshline.interfaces.mcp.service import FreshlineService

    root = tmp_path / "ws"
    init_workspace(root)
    add_project(root, "notes", ["notes"])
    put(root, b"notes/a.md")
    runner = CliRunner()
    assert runner.invoke(app, ["--workspace", str(root), "scan"]).exit_code == 0
    odd = {put(root, b"notes/new\nline.md", b"a newline\n"): "a newline",
           put(root, b"notes/new\\nline.md", b"a backslash\n"): "a backslash",
           put(root, b"notes/caf\xe9.md", b"latin-1\n"): "latin-1",
           put(root, b"notes/dir\nname/in.md", b"inside\n"): "inside"}
    shown = {show(str(root), path): text for path, text in odd.items()}
    assert len(shown) == 4 and f"{root}/notes/new\\\\nline.md" in shown  # unambiguous
    service = FreshlineService(load_config(root))
    try:
        for path, text in shown.items():
            assert service.read_document(path).text == f"{text}\n"
        manager = service.manager
        s = manager.new("notes")
        turn = [*({"tool": "read", "args": {"path": p}} for p in shown), {"say": "done"}]
        target = tmp_path / "script.json"
        target.write_text(json.dumps({"turns": [turn]}))
        result = send(manager, s.id, "read them", get_backend(f"scripted:{target}"))
        reads = [e.content for e in result.events if e.extra.get("tool") == "read"]
        assert [text in read for read, text in zip(reads, shown.values(), strict=True)]
        assert all(text in read for read, text in zip(reads, shown.values(), strict=True))
    finally:
        service.close()
    folder = show(str(root), "notes/dir\nname")
    page = runner.invoke(app, ["--workspace", str(root), "changes", "notes", "--folder", folder])
    assert page.exit_code == 0, page.output
    assert f"{folder}/in.md" in page.stdout and "caf" not in page.stdout
