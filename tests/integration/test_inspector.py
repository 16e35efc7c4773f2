"""`freshline mcp` under the real MCP Inspector CLI (`clients.INSPECTOR`).

The Inspector CLI starts a new server for every call, so nothing held only in a server's
memory survives from one call to the next: a token issued by one server is acknowledged
by the next (item 8). Each call costs a Node and a server start-up (the MCP SDK's import,
about 2 s of CPU), so the Inspector makes one call per kind of answer it must show: a
tool list, a structured result, a text-only one, a delivery, a document, a resource and
a prompt. Every tool's answers are tested in-process in tests/test_mcp.py.
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
        command = ["node", str(self.executable / "build" / "index.js"), sys.executable, "-m",
                   "freshline", "--workspace", str(self.root), "mcp", "--method", method,
                   *options]
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


def test_tools_resources_and_the_prompt_answer_the_inspector(
    inspector: Inspector, two_projects: Workspace
) -> None:
    listed = inspector("tools/list")["tools"]
    assert {t["name"] for t in listed} == TOOLS
    schemas = {t["name"]: t for t in listed}
    assert set(schemas["project_updates"]["outputSchema"]["properties"]) == {
        "session", "token", "covers", "text", "changes"}

    manifest = inspector.tool("project_manifest", project="p")  # text only
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

    # The snapshot path the manifest named (an internal file, served for its document).
    snapshot = re.search(r"(/\S+/\.freshline/snapshots/\S+\.md)", blocks)
    assert snapshot, blocks
    read = inspector.tool("read_document", path=snapshot.group(1), session=session)
    assert "Quarterly figures are up." in text(read)
    assert read["structuredContent"] == {"path": "notes/report.docx", "status": "ready",
                                         "note": None, "text": text(read)}

    resource = inspector("resources/read", "--uri", "freshline://project/q/manifest")
    assert "other/x.md" in resource["contents"][0]["text"]
    got = inspector("prompts/get", "--prompt-name", "catch_up", "--prompt-args", "project=p")
    told = got["messages"][0]["content"]["text"]
    assert told.startswith('<project_context project="p"') and "notes/a.md" in told
    assert re.search(r"freshline session \w+ \(project p\)", told)
