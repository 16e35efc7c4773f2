"""`freshline rewind`, `log`'s turn numbers, `session fork --at` and `diff A B` end to end,
on a real repository whose session was sent real turns of a scripted model."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.agent.runtime import send
from freshline.interfaces.cli import app
from freshline.session import SessionManager

from .conftest import git, git_env
from .test_ledger_turns import script
from .test_rewind import READ_A, edit, write

runner = CliRunner()


def cli(root: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(root), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def session(code: tuple[SessionManager, Path], tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """An isolated session: turn 1 wrote src/b.py, turn 2 edited src/a.py; then src/b.py
    was edited by hand in its worktree (not recorded yet)."""
    m, root = code
    model = script(tmp_path, [write("src/b.py", "b = 1\n")],
                   [READ_A, edit("src/a.py", "a = 1", "a = 2")])
    s = m.new("code").id
    for message in ("add b", "change a"):
        assert send(m, s, message, model).accepted
    (m.conversations.worktree(s) / "src/b.py").write_text("b = 'mine'\n")
    yield root, s


def test_log_numbers_the_turns_and_marks_the_rewound_events(session: tuple[Path, str]) -> None:
    root, s = session
    code, out, err = cli(root, "rewind", s, "2", "--conversation", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["turn"], done["mode"], done["restored"], done["paths"]) == (
        2, "conversation", [], ["src/a.py"])
    code, out, _ = cli(root, "updates", s)  # what the next send will tell
    assert 'The conversation was rewound to before the message "change a"' in out
    assert f"{root}/.freshline/worktrees/{s}/src/a.py" in out
    code, out, _ = cli(root, "log", s)
    lines = out.splitlines()
    assert lines[1].startswith("turn 1   ") and "add b" in lines[1]
    assert lines[-1].startswith("         ") and " rewind " in lines[-1]
    assert "rewind to turn 2 (conversation)" in lines[-1]
    rewound = [line for line in lines if line.endswith("(rewound)")]
    assert rewound[0].startswith("turn 2   ") and "change a" in rewound[0]
    assert len(rewound) == 5  # turn 2: the message, a reply with two tools, the answer
    events = json.loads(cli(root, "log", s, "--json")[1])
    assert [e["turn"] for e in events if e["author"] == "user"] == [1, 2]
    assert [e["rewound"] for e in events].count(True) == len(rewound)
    assert events[-1]["rewind"]["to"] == next(e["commit"] for e in events if e["turn"] == 2)


def test_others_edits_stop_a_script_with_exit_3_until_yes(session: tuple[Path, str]) -> None:
    root, s = session
    head = json.loads(cli(root, "log", s, "--json")[1])[-1]["commit"]
    code, out, err = cli(root, "rewind", s, "1", "--json")
    assert code == 3
    stopped = json.loads(out)
    assert stopped["overwrites"] == [
        {"path": "src/b.py", "by": "unrecorded", "name": "", "turn": None}]
    assert "would overwrite 1 path" in stopped["error"]
    code, _out, err = cli(root, "rewind", s, "1")
    assert code == 3
    assert "src/b.py (edited by hand in the worktree, not recorded yet)" in err
    assert json.loads(cli(root, "log", s, "--json")[1])[-1]["commit"] == head  # nothing moved
    code, out, err = cli(root, "rewind", s, "1", "--yes")
    assert code == 0, err
    assert out.splitlines()[0] == (
        "rewind to turn 1 (code and conversation): 2 files put back, 1 of them changed by "
        "others since")


def test_bad_rewinds_are_one_line_exit_2(session: tuple[Path, str]) -> None:
    root, s = session
    for args, message in (
        (["2", "--code", "--both"], "give one of --code, --conversation and --both"),
        (["9"], "no turn 9 in this conversation (turns 1 to 2)"),
        (["0x12"], "neither a turn number nor a commit id"),
    ):
        code, _out, err = cli(root, "rewind", s, *args)
        assert code == 2 and err.count("\n") == 1 and message in err


def test_fork_at_a_turn_then_diff_the_two_heads(session: tuple[Path, str]) -> None:
    root, s = session
    code, out, err = cli(root, "session", "fork", s, "--at", "2", "--json")
    assert code == 0, err
    forked = json.loads(out)["session"]
    code, out, err = cli(root, "diff", s, forked, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["other"] == forked and "-a = 2" in data["patch"] and "+a = 1" in data["patch"]
    code, _out, err = cli(root, "session", "fork", s, "--at", "3")
    assert code == 2 and "no turn 3" in err


def test_a_fork_prints_its_bare_id_and_says_what_it_is(session: tuple[Path, str]) -> None:
    """Seen: `F=$(freshline session fork …)` got a sentence; the fork had the original's
    title; its first block said it had been closed for a while."""
    root, s = session
    code, out, err = cli(root, "session", "fork", s, "--at", "2")
    assert code == 0, err
    forked = out.strip()
    assert out == f"{forked}\n" and f"forked {s} into {forked}" in err
    titles = {row["id"]: row["title"] for row in json.loads(cli(root, "session", "list",
                                                                  "--json")[1])}
    assert titles == {s: "add b", forked: "fork at turn 2: add b"}
    _code, blocks, _err = cli(root, "updates", forked)
    assert f"This conversation is a fork of session {s}, where its turn 2 began" in blocks
    assert "closed for a while" not in blocks


ASK = "import sys\nfrom freshline.interfaces.cli import main\nsys.exit(main())\n"


def test_on_a_terminal_the_rewind_asks_first(session: tuple[Path, str]) -> None:
    root, s = session
    for answer, expected in (("n", 3), ("y", 0)):
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-c", ASK, "--workspace", str(root), "rewind", s, "1"],
            stdin=follower, stdout=follower, stderr=follower,
            env=git_env(PYTHONPATH=os.pathsep.join(sys.path), FRESHLINE_AUTOWATCH="0"),
        )
        os.close(follower)
        seen = _read_until(leader, b"[y/N]")
        os.write(leader, answer.encode() + b"\n")
        seen += _read_until(leader, b"")
        assert proc.wait(30) == expected, seen
        os.close(leader)
        text = seen.decode()
        assert "would overwrite 1 path changed since by someone other than this" in text
        assert "src/b.py (edited by hand in the worktree, not recorded yet)" in text
    assert git(root, "show", "--stat", "--format=", f"refs/freshline/conversations/{s}^") \
        .startswith("src/b.py")  # the edit was recorded before it was overwritten


def _read_until(fd: int, marker: bytes, timeout: float = 30.0) -> bytes:
    """What the terminal shows until `marker` (b"": until it closes)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (marker and marker in seen):
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break  # the other side closed
        if not chunk:
            break
        seen += chunk
    return seen
