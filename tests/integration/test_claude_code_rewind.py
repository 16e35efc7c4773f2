"""Checkpoints and rewind under the real Claude Code CLI (`clients.CLAUDE_CODE`), offline.

One Claude Code process (stream-json, several turns) with the hook as `freshline hook
install claude-code` installs it: turn 1 says hello, turn 2's model edits a note with Bash,
the user edits another between turns, turn 3's model writes a note with Write, the user
adds one more and runs `/compact`, turn 4 follows the compaction. Then, with the session
ended, `freshline rewind S 2 --code --yes` puts the files back to where turn 2 began. Run
twice: with the service answering the http hooks, and with none (their stand-ins answer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Workspace, serving
from tests.fake_model_servers import FakeReply
from tests.integration.anthropic_stub import last_user_text
from tests.integration.clients import CLAUDE_CODE, install
from tests.integration.test_claude_code import MANIFEST, UPDATES, named, running, updates_block

pytestmark = pytest.mark.timeout(900)  # the first run installs the client

A_AT_TURN_2 = b"# A\n\nas turn 2 found it \xe2\x80\x94 bytes kept\n"
B_AT_TURN_2 = b"# B\n"


def tool_results(body: dict[str, Any]) -> set[str]:
    """The ids of the tool results the request's last message carries."""
    content = body["messages"][-1].get("content")
    return {p.get("tool_use_id") for p in content if p.get("type") == "tool_result"} \
        if isinstance(content, list) else set()


def responder(root: Path) -> Any:
    def answer(body: dict[str, Any]) -> FakeReply:
        asked, done = last_user_text(body), tool_results(body)
        if "BASH-IT" in asked and "toolu_bash" not in done:
            return FakeReply(tool_calls=[("toolu_bash", "Bash", {
                "command": "printf '# A, by bash\\n' > notes/a.md", "description": "edit a"})])
        if "WRITE-IT" in asked and "toolu_write" not in done:
            return FakeReply(tool_calls=[("toolu_write", "Write", {
                "file_path": str(root / "notes" / "sub" / "b.md"), "content": "# B, by Write\n"})])
        return FakeReply(text="Done.")

    return answer


@pytest.fixture(scope="module")
def executable() -> Path:
    return install(CLAUDE_CODE)


def freshline(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "freshline", "--workspace", str(root), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("served", [True, False], ids=["service", "stand-ins"])
def test_rewind_puts_back_bash_and_write_edits_and_names_the_users(
    executable: Path, ws: Workspace, tmp_path: Path, served: bool
) -> None:
    """Seen with no service: a Bash edit was told back to the agent, and the files were
    not put back (PreToolUse, PostToolUse and Stop were posted to nobody)."""
    root = ws.root
    ws.write("notes/a.md", A_AT_TURN_2.decode())
    ws.write("notes/sub/b.md", B_AT_TURN_2.decode())
    ws.write("notes/u.md", "# U\n")
    ws.configure({"p": {"include": ["notes"]}})

    def between(turn: int) -> None:
        if turn == 2:
            ws.write("notes/u.md", "# U, the user's\n")
        if turn == 3:
            ws.write("notes/late.md", "# written just before /compact\n")

    with serving() if served else nullcontext(), \
            running(executable, ws, tmp_path, responder(root)) as claude:
        turns = claude.conversation("hello", "please BASH-IT", "please WRITE-IT", "/compact",
                                    "where were we?", between=between)
    hello, bash, write, _compact, after = turns
    assert MANIFEST in hello[0].last
    assert (root / "notes/a.md").read_text() == "# A, by bash\n"
    told = updates_block(write[0].last)  # turn 3: the user's edit, not the agent's Bash
    assert told is not None and named(told, root) == {"notes/u.md"}
    assert bash and updates_block(bash[-1].last) is None  # nothing told back after Bash
    # After /compact: the manifest again, and what the last block told, as changes again
    first = after[0]
    assert MANIFEST in first.text and UPDATES in first.text
    retold = updates_block(first.text)
    assert retold is not None and {"notes/u.md", "notes/late.md"} <= named(retold, root)

    [session] = json.loads(freshline(root, "session", "list", "--json").stdout)
    log = json.loads(freshline(root, "log", session["id"], "--json").stdout)
    assert [e["content"] for e in log if e["turn"]] == [
        "hello", "please BASH-IT", "please WRITE-IT", "where were we?"]
    done = freshline(root, "rewind", session["id"], "2", "--code", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    rewind = json.loads(done.stdout)
    assert (root / "notes/a.md").read_bytes() == A_AT_TURN_2  # Bash's edit, byte for byte
    assert (root / "notes/sub/b.md").read_bytes() == B_AT_TURN_2  # Write's
    by_others = {o["path"]: o["by"] for o in rewind["overwrites"]}
    assert by_others == {"notes/u.md": "outside", "notes/late.md": "outside"}
    assert not (root / "notes/late.md").exists() and (root / "notes/u.md").read_text() == "# U\n"
