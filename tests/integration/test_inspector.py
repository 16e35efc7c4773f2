"""`freshline mcp` under the real MCP Inspector CLI (`clients.INSPECTOR`).

The Inspector CLI starts a new server for every call, so nothing held only in a server's
memory survives from one call to the next: a token issued by one server is acknowledged
by the next (item 8), and every tool, the resources and the prompt are called as a client
nobody here wrote calls them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import docx
import pytest

from tests.conftest import Workspace
from tests.integration.clients import INSPECTOR, install

pytestmark = pytest.mark.timeout(900)  # the first run installs the client

TOOLS = {"list_projects", "project_manifest", "open_session", "project_updates", "acknowledge",
         "project_changes", "project_files", "read_document"}


class Inspector:
    """The Inspector CLI pointed at `freshline mcp` on one workspace."""

    def __init__(self, executable: Path, root: Path) -> None:
        self.executable = executable
        self.root = root

    def __call__(self, method: str, *options: str) -> Any:
        """One call (a fresh server process); its JSON result."""
        command = [str(self.executable), "--cli", sys.executable, "-m", "freshline",
                   "--workspace", str(self.root), "mcp", "--method", method, *options]
        done = subprocess.run(command, cwd=self.root, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def tool(self, name: str, **args: str) -> Any:
        """Call a tool that must succeed."""
        pairs = [f"{key}={value}" for key, value in args.items()]
        result = self("tools/call", "--tool-name", name, *(["--tool-arg", *pairs] if pairs else []))
        assert result.get("isError") is not True, result
        return result


def text(result: Any) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.fixture(scope="module")
def executable() -> Path:
    return install(INSPECTOR)


@pytest.fixture
def inspector(executable: Path, two_projects: Workspace) -> Inspector:
    return Inspector(executable, two_projects.root)


def test_every_tool_answers_the_inspector(
    inspector: Inspector, two_projects: Workspace
) -> None:
    listed = inspector("tools/list")["tools"]
    assert {t["name"] for t in listed} == TOOLS
    schemas = {t["name"]: t for t in listed}
    assert set(schemas["project_updates"]["outputSchema"]["properties"]) == {
        "session", "token", "covers"}

    # Each call starts a server process (the MCP SDK's import, seconds): one call per kind
    # of result the Inspector must show (structured, text only, paged, a document); every
    # tool's answers are tested in-process in tests/test_mcp.py.
    manifest = inspector.tool("project_manifest", project="p")
    assert text(manifest).startswith('<project_context project="p"')
    assert "structuredContent" not in manifest

    report = docx.Document()
    report.add_paragraph("Quarterly figures are up.")
    report.save(str(two_projects.root / "notes" / "report.docx"))
    session = inspector.tool("open_session", project="p")["structuredContent"]["session"]
    first = inspector.tool("project_updates", session=session)
    blocks = text(first)
    assert blocks.startswith("<project_context ") and "\n" in blocks  # real lines, not "\\n"
    token = first["structuredContent"]["token"]
    assert f'delivery="{token}"' in blocks
    # Another server process acknowledges what the last one delivered.
    acked = inspector.tool("acknowledge", session=session, token=token)
    assert acked["structuredContent"]["cursor"] == first["structuredContent"]["covers"]

    two_projects.write("notes/b.md", "# B\n")
    update = inspector.tool("project_updates", session=session)
    assert "notes/b.md" in text(update) and "notes/a.md" not in text(update)

    page = inspector.tool("project_changes", session=session, since="0")
    assert "notes/b.md" in text(page) and page["structuredContent"]["pages"] == 1
    # The snapshot path the manifest named (an internal file, served for its document).
    snapshot = re.search(r"(/\S+/\.freshline/snapshots/\S+\.md)", blocks)
    assert snapshot, blocks
    read = inspector.tool("read_document", path=snapshot.group(1), session=session)
    assert "Quarterly figures are up." in text(read)
    assert read["structuredContent"] == {"path": "notes/report.docx", "status": "ready",
                                         "note": None}


def test_resources_and_the_prompt_answer_the_inspector(inspector: Inspector) -> None:
    listed = [r["uri"] for r in inspector("resources/list")["resources"]]
    assert listed == ["freshline://project/p/manifest", "freshline://project/q/manifest"]
    read = inspector("resources/read", "--uri", "freshline://project/q/manifest")
    assert "other/x.md" in read["contents"][0]["text"]
    got = inspector("prompts/get", "--prompt-name", "catch_up", "--prompt-args", "project=p")
    told = got["messages"][0]["content"]["text"]
    assert told.startswith('<project_context project="p"') and "notes/a.md" in told
    assert re.search(r"freshline session \w+ \(project p\)", told)
