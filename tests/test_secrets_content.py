"""Issue 31's "what was seen", end to end on a real checkout: hard links to `.git/config`,
to a file outside the workspace and to `.env` are read by no channel, and keys pasted into
ordinary files reach no model, no conversation commit or tree, no snapshot and no MCP or
ACP answer; `status` flags the files; a path or a marker line allows a false positive."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.access import AccessDenied
from freshline.agent.backends import get_backend
from freshline.agent.messages import ToolCall
from freshline.agent.runtime import send
from freshline.agent.tools import Toolbox, ToolMode
from freshline.interfaces.cli import app
from freshline.interfaces.mcp.service import FreshlineService
from freshline.session import SessionManager
from freshline.session.rules import live_rules
from tests.acp_harness import proxied

from .conftest import Workspace, git, hook_answer

OPENAI = "sk-proj-" + "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1nOp3rSt5vWx7zA1bC3dE5fG7hI9"
AWS_ID, AWS_SECRET = "AKIAQ3EGRT5NXMPLW7ZD", "h7Kq2LmN9pRt5VwX1yZ3aB6cD8eF0gH4iJ2kL5mN"
GITHUB = "ghp_" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
GITCONFIG, OUTSIDE, ENV = "gitconfig-value-456", "outside-value-123", "env-value-789"
RAW = [OPENAI, AWS_ID, AWS_SECRET, GITHUB, KEY_BODY, JWT, GITCONFIG, OUTSIDE, ENV]
HARD = ["app/hard_gitconfig.txt", "app/hard_out.txt", "app/env_hardlink.txt"]
CONTENT = ["app/settings.py", "app/config.ini", "app/notes.md"]


def leaked(text: str) -> list[str]:
    """The raw values found in `text`."""
    return [value for value in RAW if value in text]


@pytest.fixture
def hostile(ws: Workspace, tmp_path: Path) -> Workspace:
    root = ws.root
    git(root, "init", "--quiet", "--initial-branch=main")
    with open(root / ".git/config", "a", encoding="utf-8") as config:
        config.write(f"# {GITCONFIG}\n")
    ws.write("app/settings.py", f'DEBUG = True\nOPENAI_API_KEY = "{OPENAI}"\n')
    ws.write("app/config.ini", f"[default]\naws_access_key_id = {AWS_ID}\n"
                               f"aws_secret_access_key = {AWS_SECRET}\n")
    ws.write("app/notes.md", f"# Notes\n\ntoken {GITHUB}\n\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
                             f"{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n\nthe end\n")
    ws.write("app/page.html", f"<html><body><p>session {JWT}</p></body></html>\n")
    ws.write("app/.env", f"API_KEY={ENV}\n")
    ws.write("app/plain.md", "nothing to hide\n")
    outside = tmp_path / "outside" / "file.txt"
    outside.parent.mkdir()
    outside.write_text(f"{OUTSIDE}\n")
    ws.configure({"app": {"include": ["app"]}})
    git(root, "add", "app/settings.py", "freshline.toml")  # a tracked file holds a key too
    git(root, "commit", "--quiet", "-m", "start")
    os.link(root / ".git/config", root / HARD[0])
    os.link(outside, root / HARD[1])
    os.link(root / "app/.env", root / HARD[2])
    return ws


def script(tmp_path: Path, *turns: list[dict[str, object]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"scripted:{path}"


def conversation_objects(root: Path, session: str) -> str:
    """Every commit message and every blob reachable from a live conversation."""
    repo = root / ".freshline/conversations.git"
    listed = git(repo, "rev-list", "--objects", f"refs/freshline/conversations/{session}")
    oids = "\n".join(line.split()[0] for line in listed.splitlines()).encode() + b"\n"
    done = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, input=oids, check=True,
                          capture_output=True)
    return done.stdout.decode("utf-8", "replace")


def test_the_agents_tools_and_the_live_conversation_carry_no_secret(
    hostile: Workspace, tmp_path: Path
) -> None:
    root = hostile.root
    steps = [{"tool": "list", "args": {"path": "app"}},
             *({"tool": "read", "args": {"path": p}} for p in [*HARD, *CONTENT, "app/page.html"]),
             {"tool": "read", "args": {"path": "app/notes.md", "start": 6, "end": 6}},
             {"tool": "search", "args": {"pattern": r"value-\d|sk-|ghp_|AKIA|BEGIN|eyJ|KEY|aws_"}},
             {"say": "done"}]
    manager = SessionManager(hostile.config())
    try:
        s = manager.new("app")
        manager.materialize("app")
        result = send(manager, s.id, "look", get_backend(script(tmp_path, steps)))
        hostile.write("app/later.py", f'GITHUB_TOKEN = "{GITHUB}"\n')
        again = send(manager, s.id, "and now?", get_backend(script(tmp_path, [{"say": "ok"}])))
    finally:
        manager.close()
    tools = [e.content for e in result.events if e.author.value == "tool"]
    for text in tools:
        assert leaked(text) == [], text
    listing, *tools = tools
    assert "hard_out.txt  (18 bytes; 2 hard links: not read)" in listing
    for refused in tools[:3]:
        assert "2 hard links" in refused and "refused" in refused
    settings, config, notes, page, line6, search = tools[3:]
    assert 'OPENAI_API_KEY = "[secret withheld: openai-key]"' in settings
    assert settings.endswith("[1 secret withheld: openai-key]")
    assert config.endswith("[2 secrets withheld: aws-access-key, aws-secret-key]")
    assert "[secret withheld: private-key]" in notes and "the end" in notes
    assert "[secret withheld: jwt]" in page  # the snapshot of a document
    assert line6.startswith("[/") and "lines 6-6" in line6  # inside the key block: withheld
    assert "[not searched, each has more than one hard link: " in search
    assert "secrets withheld]" in search or "secret withheld]" in search
    assert leaked(result.wire_prompt + again.wire_prompt) == []
    everything = conversation_objects(root, s.id)
    assert leaked(everything) == []
    assert "[secret withheld: openai-key]" in everything  # settings.py's withheld text
    assert "[secret withheld: github-token]" in everything  # the file created later
    assert "nothing to hide" in everything  # files without secrets are as they are
    tree = git(root / ".freshline/conversations.git", "ls-tree", "-r", "--name-only",
               f"refs/freshline/conversations/{s.id}")
    assert not any(h in tree.splitlines() for h in HARD)
    snapshots = "".join(p.read_text() for p in (root / ".freshline/snapshots").glob("*.md"))
    assert "[secret withheld: jwt]" in snapshots and leaked(snapshots) == []

    status = CliRunner().invoke(app, ["--workspace", str(root), "status", "--json"])
    flagged = {w["path"]: w["kinds"] for w in json.loads(status.stdout)["withheld"]}
    assert flagged["app/settings.py"] == ["openai-key"]
    assert flagged["app/page.html"] == ["jwt"]
    assert set(CONTENT) <= set(flagged)
    human = CliRunner().invoke(app, ["--workspace", str(root), "status"])
    assert "secrets withheld from" in human.stdout and "allow-secret" in human.stdout


def test_mcp_read_document_withholds_and_refuses_hard_links(hostile: Workspace) -> None:
    service = FreshlineService(hostile.config())
    try:
        for path in HARD:
            with pytest.raises(AccessDenied, match="hard links"):
                service.read_document(path)
        settings = service.read_document("app/settings.py")
        notes = service.read_document("app/notes.md")
        page = service.read_document("app/page.html")
    finally:
        service.close()
    assert settings.text is not None and leaked(settings.text) == []
    assert settings.note == "[1 secret withheld: openai-key]"
    assert notes.text is not None and leaked(notes.text) == [] and "the end" in notes.text
    assert page.text is not None and leaked(page.text) == [] and "jwt" in (page.text or "")


async def test_acp_reads_are_withheld_and_hard_links_refused(
    hostile: Workspace, tmp_path: Path
) -> None:
    root = hostile.root
    async with proxied(tmp_path, root) as run:
        session = await run.new(root)
        for path in [*HARD, "app/settings.py", "app/notes.md"]:
            await run.prompt(session, f"read {root / path}")
        await run.prompt(session, f"read {root / 'app/notes.md'} 6 1")
        await run.prompt(session, f"write {root / 'app/settings.py'} "
                                  "OPENAI_API_KEY=[secret withheld: openai-key]")
    raw = run.log.read_text(encoding="utf-8")
    assert leaked(raw) == []
    assert raw.count("2 hard links") == 3
    assert "[secret withheld: private-key]" in raw and "[secret withheld: openai-key]" in raw
    said = run.client.said()
    assert "read 1 characters" in said  # line 6 lies inside the key block: withheld, "\n"
    assert "holds secrets withheld from the agent" in said
    assert OPENAI in (root / "app/settings.py").read_text()
    assert str(root / HARD[0]) not in run.client.reads  # refused before the client is asked


def test_allowed_paths_marker_lines_and_allowed_hard_links_read_as_they_are(
    hostile: Workspace, tmp_path: Path
) -> None:
    root = hostile.root
    hostile.write("app/fixtures/key.txt", f"{GITHUB}\n")
    hostile.write("app/doc.md", f"example: {AWS_ID}  <!-- freshline: allow-secret -->\n")
    with open(root / "freshline.toml", "a", encoding="utf-8") as config:
        config.write('[security]\nallow_secrets_in = ["app/fixtures/"]\nallow_hardlinks = true\n')
    manager = SessionManager(hostile.config())
    try:
        box = Toolbox(root, rules=live_rules(manager, ["app"]), withholder=manager.withholder)
        read = {p: box.run(ToolCall("c", "read", {"path": p})).content
                for p in ("app/fixtures/key.txt", "app/doc.md", HARD[1], "app/settings.py")}
    finally:
        manager.close()
    assert read["app/fixtures/key.txt"] == f"{GITHUB}\n"
    assert AWS_ID in read["app/doc.md"]
    assert read[HARD[1]] == f"{OUTSIDE}\n"
    assert OPENAI not in read["app/settings.py"]


def test_a_write_cannot_put_the_markers_over_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "src").mkdir(parents=True)
    (root / "src/settings.py").write_text(f'KEY = "{OPENAI}"\nDEBUG = False\n')
    box = Toolbox(root, ToolMode.ISOLATED)
    shown = box.run(ToolCall("c", "read", {"path": "src/settings.py"})).content
    body = shown.rsplit("\n[1 secret", 1)[0].replace("False", "True")
    refused = box.run(ToolCall("c", "write", {"path": "src/settings.py", "content": body}))
    assert refused.is_error and "withheld from you" in refused.content
    edited = box.run(ToolCall("c", "edit", {"path": "src/settings.py",
                                            "old": "DEBUG = False", "new": "DEBUG = True"}))
    assert not edited.is_error
    assert (root / "src/settings.py").read_text() == f'KEY = "{OPENAI}"\nDEBUG = True\n'


def test_a_nan_wait_is_refused_before_any_send(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["notes"]}})
    with open(ws.root / "freshline.toml", "a", encoding="utf-8") as config:
        config.write("[model]\nretry_wait_s = nan\n")
    out = CliRunner().invoke(app, ["--workspace", str(ws.root), "status"])
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        "error: freshline.toml: model.retry_wait_s: must be between 0 and 3600 seconds, got nan"]


def test_a_hard_linked_document_is_not_converted(hostile: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "page.html"
    outside.write_text(f"<p>{OUTSIDE}</p>\n")
    os.link(outside, hostile.root / "app/linked.html")
    manager = SessionManager(hostile.config())
    try:
        result = manager.materialize("app")
    finally:
        manager.close()
    assert "2 hard links" in result.failures["app/linked.html"]
    snapshots = "".join(p.read_text() for p in (hostile.root / ".freshline/snapshots").glob("*"))
    assert OUTSIDE not in snapshots


def test_a_token_in_a_file_name_reaches_no_channel(ws: Workspace) -> None:
    """Seen (issue 47 item 10): a token in a file name showed in the manifest. Every
    channel that names files withholds it: the hook's blocks, MCP's manifest, pages and
    structured changes."""
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    ws.write(f"notes/{GITHUB}.md", "named after a token\n")
    service = FreshlineService(ws.config())
    try:
        said = [service.project_manifest("p"),
                service.project_files("p", "", 1).text]
        session = service.open_session("p").session
        first = service.project_updates(session)
        service.acknowledge(session, str(first.token))
        ws.write(f"notes/{GITHUB}.md", "named after a token, edited\n")
        news = service.project_updates(session)
        said += [first.text, news.text, json.dumps([c.path for c in news.changes]),
                 service.project_changes(session, 0, 1).text]
        assert news.changes and "[secret withheld: github-token]" in news.changes[0].path
    finally:
        service.close()
    said.append(hook_answer(ws.root))
    assert all(text for text in said)
    assert not [text for text in said if GITHUB in text]
