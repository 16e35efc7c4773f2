"""Rewinding sessions to where a human turn began, and forking them there: real sends of a
scripted model on real repositories, live and isolated, each mode."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from freshline.agent.messages import Role
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.conversation import Author
from freshline.conversation.events import RewindMode
from freshline.conversation.rewind import By, RewindPlan
from freshline.errors import NotFoundError, RewindStop, UsageError
from freshline.session import SessionManager
from freshline.session.rewinding import rewind
from freshline.session.sharing import fork

from .conftest import Workspace, git, git_env
from .test_ledger_turns import Script, branched, read, script

READ_A = read("src/a.py")


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"tool": "edit", "args": {"path": path, "old": old, "new": new}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write", "args": {"path": path, "content": content}}


def said(requests: list[Any]) -> list[str]:
    """The user messages of the last request a model was sent (the replayed history and
    the new message), without their blocks."""
    return [m.content.rsplit("\n\n", 1)[-1] for m in requests[-1] if m.role is Role.USER]


def wire(requests: list[Any]) -> str:
    """The new message of the last request, with its blocks."""
    return str([m for m in requests[-1] if m.role is Role.USER][-1].content)


def worktree(m: SessionManager, session: str) -> Path:
    return m.conversations.worktree(session)


def turns(m: SessionManager, session: str, model: Script, *messages: str) -> None:
    for message in messages:
        assert send(m, session, message, model).accepted


@pytest.fixture
def isolated(
    code: tuple[SessionManager, Path], tmp_path: Path
) -> Iterator[tuple[SessionManager, str, Script]]:
    """An isolated session whose turn 1 wrote src/b.py and turn 2 edited src/a.py."""
    m, _root = code
    model = script(tmp_path, [write("src/b.py", "b = 1\n")],
                   [READ_A, edit("src/a.py", "a = 1", "a = 2")], [], [], [])
    s = m.new("code").id
    turns(m, s, model, "add b", "change a")
    yield m, s, model


def test_both_puts_the_files_and_the_transcript_back_where_the_turn_began(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = isolated
    tree = worktree(m, s)
    assert (tree / "src/a.py").read_text() == "a = 2\n"
    head = m.conversations.head(s)
    done = rewind(m, s, "2")
    assert done.rewind.turn == 2 and done.restored == ("src/a.py",) and done.message == "change a"
    assert (tree / "src/a.py").read_text() == "a = 1\n" and (tree / "src/b.py").exists()
    *kept, last = m.conversations.log(s)
    assert kept[-1].commit == head  # nothing deleted: the rewound turn is still there
    assert last.author is Author.SYSTEM and last.rewind is not None
    assert last.content == "rewind to turn 2 (code and conversation)"
    assert git(tree, "rev-parse", "HEAD") == done.head == last.commit
    turns(m, s, model, "change a differently")
    assert said(model.requests) == ["add b", "change a differently"]  # turn 2 is forgotten
    told = wire(model.requests)
    assert 'The conversation was rewound to before the message "change a"' in told
    assert "No path in this project differs from what you last saw." in told
    # Published, the work carries only what remains: turn 1's b.py, not turn 2's edit.
    commit = m.conversations.publish(s, "agent/work")
    assert git(tree, "diff", "--name-only", "main", commit) == "src/b.py"


def test_code_puts_the_files_back_and_keeps_the_transcript_whole(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = isolated
    done = rewind(m, s, "2", RewindMode.CODE)
    assert (worktree(m, s) / "src/a.py").read_text() == "a = 1\n"
    assert done.rewind.paths == ("src/a.py",)  # what the agent last saw had a = 2
    turns(m, s, model, "go on")
    assert said(model.requests) == ["add b", "change a", "go on"]
    told = wire(model.requests)
    assert 'The files were rewound to how they were when the message "change a" was sent' in told
    assert f"- {worktree(m, s)}/src/a.py\n" in told


def test_conversation_keeps_the_files_and_tells_what_the_forgotten_turns_changed(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = isolated
    (worktree(m, s) / "src/c.py").write_text("c = 'mine'\n")  # by hand, not recorded yet
    done = rewind(m, s, "2", RewindMode.CONVERSATION)
    assert done.restored == () and done.rewind.paths == ("src/a.py",)
    assert (worktree(m, s) / "src/a.py").read_text() == "a = 2\n"
    assert (worktree(m, s) / "src/c.py").read_text() == "c = 'mine'\n"  # files untouched
    turns(m, s, model, "what is a?")
    assert said(model.requests) == ["add b", "what is a?"]
    told = wire(model.requests)
    assert "but the files keep every change made since" in told
    assert f"- {worktree(m, s)}/src/a.py\n" in told
    # Told once: the turn after that one is not told again.
    turns(m, s, model, "and now?")
    assert "rewound" not in wire(model.requests)


def test_a_rewound_turn_can_be_rewound_to_again_and_log_numbers_every_turn(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = isolated
    rewind(m, s, "1")  # back to before everything: the manifest comes again
    assert not (worktree(m, s) / "src/b.py").exists()
    assert m.get(s).needs_manifest
    log = m.conversations.log(s)
    human = [e for e in log if e.author is Author.USER]
    done = rewind(m, s, human[1].commit[:8])  # turn 2 by its commit: a redo of turn 1
    assert done.rewind.turn == 2
    assert (worktree(m, s) / "src/b.py").exists()
    assert [e.content for e in m.conversations.transcript(s) if e.author is Author.USER] == [
        "add b"]
    turns(m, s, model, "third")
    numbers = [e.content for e in m.conversations.log(s) if e.author is Author.USER]
    assert numbers == ["add b", "change a", "third"]  # turn 3 is the next number


BAD_TURNS = [
    ("0", NotFoundError, "no turn 0 in this conversation (turns 1 to 2)"),
    ("7", NotFoundError, "no turn 7"),
    ("abc", UsageError, "neither a turn number nor a commit id"),
    ("zzzzzz", UsageError, "neither a turn number nor a commit id"),
    ("ffffffff", NotFoundError, "no event 'ffffffff'"),
]


def test_a_bad_turn_is_one_line_and_moves_nothing(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, _ = isolated
    head = m.conversations.head(s)
    for turn, error, message in BAD_TURNS:
        with pytest.raises(error, match=re.escape(message)):
            rewind(m, s, turn)
    assert m.conversations.head(s) == head


def test_a_commit_that_is_not_a_human_turn_is_refused(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, _ = isolated
    answer = next(e for e in m.conversations.log(s) if e.author is Author.ASSISTANT)
    with pytest.raises(UsageError, match="is not a human turn's event"):
        rewind(m, s, answer.commit or "")


def test_edits_by_hand_after_the_turn_are_named_and_asked_about(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    """Seen elsewhere: a checkpoint restore overwrote the user's own edits without a word.
    Here every path someone other than the conversation changed since is named first."""
    m, s, model = isolated
    tree = worktree(m, s)
    (tree / "src/b.py").write_text("b = 'mine'\n")  # by hand, then recorded by turn 3
    turns(m, s, model, "third")
    (tree / "src/c.py").write_text("c = 'mine too'\n")  # by hand, not recorded yet
    head = m.conversations.head(s)
    with pytest.raises(RewindStop, match="would overwrite 2 paths") as stop:
        rewind(m, s, "1")
    assert stop.value.by == {"src/b.py": "outside", "src/c.py": "unrecorded"}
    assert m.conversations.head(s) == head and (tree / "src/c.py").exists()  # nothing moved
    asked: list[RewindPlan] = []
    done = rewind(m, s, "1", confirm=lambda plan: asked.append(plan) or True)
    assert [(o.path, o.by, o.turn) for o in asked[0].overwrites] == [
        ("src/b.py", By.OUTSIDE, 3), ("src/c.py", By.UNRECORDED, None)]
    assert done.restored == ("src/a.py", "src/b.py", "src/c.py")
    assert not (tree / "src/b.py").exists() and not (tree / "src/c.py").exists()
    # Nothing is lost: the edits not recorded yet were recorded before the rewind.
    kept = m.conversations.log(s)[-2]
    assert kept.content == "edits not recorded yet, kept before a rewind"
    assert git(tree, "show", f"{kept.commit}:src/c.py") == "c = 'mine too'"
    assert git(tree, "status", "--porcelain") == ""


def test_a_code_rewind_past_a_refresh_keeps_what_it_merged_and_publishes_what_remains(
    code: tuple[SessionManager, Path], tmp_path: Path,
) -> None:
    m, root = code
    middle = "".join(f"# {i}\n" for i in range(5))
    (root / "src/a.py").write_text(f"a = 1\n{middle}z = 0\n")
    git(root, "commit", "--quiet", "-am", "longer")
    model = script(tmp_path, [READ_A, edit("src/a.py", "a = 1", "a = 2")],
                   [write("src/b.py", "b = 1\n")], [write("src/c.py", "c = 1\n")], [])
    s = m.new("code").id
    turns(m, s, model, "change a", "add b")
    (root / "src/a.py").write_text(f"a = 1\n{middle}z = 9\n")  # upstream, merged by turn 3
    git(root, "commit", "--quiet", "-am", "upstream")
    turns(m, s, model, "add c")
    tree = worktree(m, s)
    assert (tree / "src/a.py").read_text() == f"a = 2\n{middle}z = 9\n"
    upstream = git(root, "rev-parse", "main")
    done = rewind(m, s, "2", RewindMode.CODE)  # keeps turn 1's a = 2, undoes b and c
    assert done.overwrites == () and done.rewind.kept == upstream
    assert done.restored == ("src/b.py", "src/c.py")
    done = rewind(m, s, "1", RewindMode.CODE)  # the refresh's change is kept: nothing to ask
    assert done.rewind.kept == upstream and done.overwrites == ()
    assert (tree / "src/a.py").read_text() == f"a = 1\n{middle}z = 9\n"  # upstream's z stays
    assert not (tree / "src/b.py").exists() and not (tree / "src/c.py").exists()
    # The next send merges nothing again, and publishing carries no upstream change back.
    rewind(m, s, "2", RewindMode.CODE)  # redo turn 1's edit: only it remains
    commit = m.conversations.publish(s, "agent/work")
    assert git(root, "diff", "--name-only", "main", commit) == "src/a.py"
    assert git(root, "show", f"{commit}:src/a.py") == f"a = 2\n{middle}z = 9"
    turns(m, s, model, "go on")
    assert m.conversations.log(s)[-2].refresh is None  # nothing left to merge


@pytest.fixture
def live(ws: Workspace, tmp_path: Path) -> Iterator[tuple[SessionManager, str, Script]]:
    """A live session on a `branched` checkout (notes/g.md differs on `other`), two turns."""
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    branched(ws)
    m = SessionManager(load_config(ws.root))
    model = script(tmp_path, [], [], [], [])
    s = m.new("p").id
    turns(m, s, model, "look", "look again")
    yield m, s, model
    m.close()


def agent_writes(m: SessionManager, s: str, rel: str, text: str, turn: int) -> None:
    """The conversation's own write of a live file (what a writing channel records: the
    built-in live tools only read)."""
    path = m.config.root / rel
    path.write_text(text)
    m.record_write(s, rel, git(m.config.root, "hash-object", str(path)), turn)


def test_live_code_is_refused_unless_forced_and_then_only_its_own_files_go_back(
    live: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = live
    root = m.config.root
    agent_writes(m, s, "notes/g.md", "# G by the agent\n", 2)
    agent_writes(m, s, "notes/h.md", "# H by the agent\n", 2)
    agent_writes(m, s, "notes/i.md", "# I by the agent\n", 2)
    (root / "notes/h.md").write_text("# H, then the user's\n")  # by hand, after the turn
    (root / "notes/a.md").write_text("# A, the user's alone\n")  # never the agent's
    git(root, "commit", "--quiet", "-m", "keep the agent's g", "notes/g.md")
    m.tracker.flush()
    git(root, "checkout", "--quiet", "other")  # a git operation changes g.md after the turn
    head = m.conversations.head(s)
    for mode in (RewindMode.CODE, RewindMode.BOTH):
        with pytest.raises(UsageError, match="is live: its files are your workspace"):
            rewind(m, s, "2", mode)
    with pytest.raises(RewindStop) as stop:
        rewind(m, s, "2", RewindMode.CODE, force=True)
    assert stop.value.by == {"notes/g.md": "git", "notes/h.md": "outside"}
    assert m.conversations.head(s) == head and (root / "notes/i.md").exists()
    asked: list[RewindPlan] = []
    done = rewind(m, s, "2", RewindMode.CODE, force=True,
                  confirm=lambda plan: asked.append(plan) or True)
    assert [(o.path, o.by, o.name) for o in asked[0].overwrites] == [
        ("notes/g.md", By.GIT, "checkout"), ("notes/h.md", By.OUTSIDE, "")]
    assert done.restored == ("notes/g.md", "notes/h.md", "notes/i.md")
    assert (root / "notes/g.md").read_text() == "# G on main\n"
    assert not (root / "notes/h.md").exists() and not (root / "notes/i.md").exists()
    assert (root / "notes/a.md").read_text() == "# A, the user's alone\n"
    kept = m.conversations.log(s)[-2]  # what it overwrote is in history
    assert kept.content == "edits not recorded yet, kept before a rewind"
    private = m.conversations.git_dir_of(s)
    assert git(private, "show", f"{kept.commit}:notes/h.md") == "# H, then the user's"
    turns(m, s, model, "and now?")
    assert said(model.requests) == ["look", "look again", "and now?"]
    assert 'The files were rewound to how they were when the message "look again"' in wire(
        model.requests)


def test_live_conversation_rewinds_only_the_transcript(
    live: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = live
    (m.config.root / "notes/a.md").write_text("# A, edited\n")
    done = rewind(m, s, "2", RewindMode.CONVERSATION)
    assert done.restored == () and (m.config.root / "notes/a.md").read_text() == "# A, edited\n"
    turns(m, s, model, "again")
    assert said(model.requests) == ["look", "again"]
    told = wire(model.requests)
    assert "but the files keep every change made since" in told
    assert f"{m.config.root}/notes/a.md" in told  # the user's edit, told as a change


def test_live_both_forced_rewinds_the_transcript_and_only_the_files_it_wrote(
    live: tuple[SessionManager, str, Script],
) -> None:
    m, s, model = live
    (m.config.root / "notes/a.md").write_text("# A, the user's\n")
    done = rewind(m, s, "1", RewindMode.BOTH, force=True)  # it wrote nothing
    assert done.restored == () and m.get(s).needs_manifest
    assert (m.config.root / "notes/a.md").read_text() == "# A, the user's\n"
    turns(m, s, model, "from the start")
    assert said(model.requests) == ["from the start"]
    assert "<project_context " in wire(model.requests)  # the manifest comes again


def test_a_session_without_a_conversation_has_nothing_to_rewind(
    live: tuple[SessionManager, str, Script],
) -> None:
    from freshline.context import Channel

    m, _, _ = live
    hook = m.new("p", channel=Channel.HOOK).id
    with pytest.raises(UsageError, match="records no conversation"):
        rewind(m, hook, "1")


def test_fork_at_a_turn_and_continue_both_branches(
    code: tuple[SessionManager, Path], tmp_path: Path,
) -> None:
    m, _root = code
    ours = script(tmp_path, [write("src/b.py", "b = 1\n")], [write("src/c.py", "c = 1\n")],
                  [write("src/d.py", "d = 1\n")])
    s = m.new("code").id
    turns(m, s, ours, "add b", "add c")
    original = m.conversations.head(s)
    forked = fork(m, s, None, at="2").id
    assert m.conversations.head(s) == original  # the original is untouched
    events = m.conversations.log(s)
    second = [i for i, e in enumerate(events) if e.author is Author.USER][1]
    assert m.conversations.head(forked) == events[second - 1].commit  # where turn 2 began
    # The fork holds turn 1 already: a model of its own plays from its turn 2.
    theirs = script(tmp_path, [], [write("src/e.py", "e = 1\n")])
    turns(m, forked, theirs, "add e instead")
    turns(m, s, ours, "add d")
    assert said(theirs.requests) == ["add b", "add e instead"]
    assert said(ours.requests) == ["add b", "add c", "add d"]
    assert sorted(p.name for p in (worktree(m, forked) / "src").iterdir()) == [
        "a.py", "b.py", "e.py"]
    assert sorted(p.name for p in (worktree(m, s) / "src").iterdir()) == [
        "a.py", "b.py", "c.py", "d.py"]
    patch = m.conversations.diff_between(s, forked)
    assert "+++ b/src/e.py" in patch and "--- a/src/c.py" in patch and "src/b.py" not in patch
    assert m.get(forked).turns == 2  # its next turn is numbered after the ones it shares


def test_fork_at_a_bad_turn_creates_nothing(
    isolated: tuple[SessionManager, str, Script],
) -> None:
    m, s, _ = isolated
    before = m.conversations.ids()
    with pytest.raises(NotFoundError, match="no turn 9"):
        fork(m, s, None, at="9")
    assert m.conversations.ids() == before and len(m.sessions()) == 1


KILL = """
import sys
from freshline.config import load_config
from freshline.session import SessionManager
from freshline.session.rewinding import rewind
rewind(SessionManager(load_config(sys.argv[1])), sys.argv[2], "2")
"""


@pytest.mark.parametrize("step", ["rewind:journal", "rewind:moved"])
def test_a_rewind_killed_midway_is_rolled_back(
    isolated: tuple[SessionManager, str, Script], step: str,
) -> None:
    m, s, _ = isolated
    head = m.conversations.head(s)
    env = git_env(FRESHLINE_KILL_AT=step, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", KILL, str(m.config.root), s], env=env,
                          capture_output=True, check=False)
    assert done.returncode == -9, done.stderr
    tree = worktree(m, s)
    m.get(s)  # reading the session rolls the dead process's rewind back
    assert m.conversations.head(s) == head
    assert (tree / "src/a.py").read_text() == "a = 2\n"
    assert git(tree, "status", "--porcelain") == ""
    assert rewind(m, s, "2").restored == ("src/a.py",)  # and it can be done again
