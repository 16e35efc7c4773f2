"""Live conversations, where conversations live, and concurrent sends."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from freshline.conversation import Author, Conversations, Event, Mode, repository_for
from freshline.conversation.events import as_dict
from freshline.errors import ConversationMoved, NotFoundError, UsageError
from tests.conftest import git, git_env
from tests.test_conversation_support import Upstream, scan


def write(root: Path, files: dict[str, str | None]) -> None:
    for rel, content in files.items():
        path = root / rel
        if content is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)


def test_private_repository_for_a_plain_folder(tmp_path: Path) -> None:
    write(tmp_path, {"notes/a.md": "a\n"})
    git_dir = repository_for(tmp_path)
    assert git_dir == tmp_path.resolve() / ".freshline" / "conversations.git"
    assert git(git_dir, "rev-parse", "--is-bare-repository") == "true"
    assert repository_for(tmp_path) == git_dir  # idempotent
    convs = Conversations(tmp_path)
    root = convs.open("n1", Mode.LIVE, entries=scan(tmp_path))
    assert git(git_dir, "rev-list", "--parents", "-n1", root) == root  # parentless root
    assert git(git_dir, "show", f"{root}:notes/a.md") == "a"
    with pytest.raises(UsageError, match="isolated mode needs a git checkout"):
        convs.open("i1", Mode.ISOLATED)


def test_checkout_keeps_conversations_in_its_repository(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    base = up.commit("main", {"a": "a\n"}, parent=None)
    assert repository_for(up.root) == (up.root / ".git").resolve()
    convs = Conversations(up.root)
    root = convs.open("l1", Mode.LIVE, entries=scan(up.root))
    assert up.parents(root) == [base]
    assert up.rev("refs/freshline/conversations/l1") == root
    assert convs.ids() == ["l1"]


def test_live_turn_trees_differ_exactly_by_changed_files(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "a\n", "b.md": "b\n", "dir/c.md": "c\n", "dir/d.md": "d\n"})
    os.symlink("a.md", tmp_path / "link.md")
    convs = Conversations(tmp_path)
    convs.open("n1", Mode.LIVE, entries=scan(tmp_path))
    first = convs.commit_turn(convs.prepare_turn("n1", "one", entries=scan(tmp_path)), [])
    write(tmp_path, {"a.md": "a2\n", "dir/d.md": None, "dir/e/f.md": "f\n"})
    (tmp_path / "b.md").chmod(0o755)
    second = convs.commit_turn(convs.prepare_turn("n1", "two", entries=scan(tmp_path)), [])
    trees = [e.tree or "" for e in convs.log("n1")]
    assert convs.changed_paths(trees[1], trees[2]) == ["a.md", "b.md", "dir/d.md", "dir/e/f.md"]
    git_dir = convs.git_dir
    assert git(git_dir, "show", f"{second}:a.md") == "a2"
    assert git(git_dir, "show", f"{first}:a.md") == "a"
    assert git(git_dir, "ls-tree", second, "link.md").split()[0] == "120000"
    assert git(git_dir, "cat-file", "blob", f"{second}:link.md") == "a.md"
    assert git(git_dir, "ls-tree", second, "b.md").split()[0] == "100755"
    unchanged = convs.commit_turn(convs.prepare_turn("n1", "three", entries=scan(tmp_path)), [])
    assert convs.changed_paths(second, unchanged) == []
    assert convs.commit_turn(convs.prepare_turn("n1", "none", entries=[]), []) != unchanged
    assert git(git_dir, "ls-tree", "-r", convs.head("n1")) == ""


def test_events_carry_their_own_trees_and_round_trip(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "a\n"})
    convs = Conversations(tmp_path)
    convs.open("n1", Mode.LIVE, entries=scan(tmp_path), project="notes")
    pending = convs.prepare_turn("n1", "read a", entries=scan(tmp_path))
    tool = Event(Author.TOOL, "read a.md", tool="read", args={"path": "a.md"}, result="a")
    head = convs.commit_turn(pending, [tool, Event(Author.ASSISTANT, "it says a")])
    log = convs.log("n1")
    assert log[0].root is not None and log[0].root.project == "notes"
    assert log[2] == tool and log[3].content == "it says a" and log[3].commit == head
    assert len({e.tree for e in log[1:]}) == 1
    with pytest.raises(UsageError):
        convs.commit_turn(convs.prepare_turn("n1", "x"), [log[0]])
    with pytest.raises(NotFoundError):
        convs.prepare_turn("missing", "x")
    with pytest.raises(UsageError, match="invalid conversation id"):
        convs.head("../escape")


def test_concurrent_commit_turn_in_threads_exactly_one_wins(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"a.txt": "a\n"}, parent=None)
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    pendings = [convs.prepare_turn("c1", f"message {i}") for i in range(6)]
    barrier = threading.Barrier(len(pendings))
    results: list[str | Exception] = []

    def send(pending) -> None:
        barrier.wait()
        try:
            results.append(convs.commit_turn(pending, [Event(Author.ASSISTANT, "answer")]))
        except ConversationMoved as exc:
            results.append(exc)

    threads = [threading.Thread(target=send, args=(p,)) for p in pendings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wins = [r for r in results if isinstance(r, str)]
    assert len(wins) == 1 and convs.head("c1") == wins[0]
    losses = [r for r in results if isinstance(r, Exception)]
    assert all(str(r) == (
        "conversation c1 moved while this turn was prepared (another send won); "
        "nothing was recorded: send again") for r in losses)
    assert [e.author for e in convs.log("c1")] == [Author.SYSTEM, Author.USER, Author.ASSISTANT]


SENDER = """
import sys
from pathlib import Path
from freshline.conversation import Author, Conversations, Event
from freshline.errors import ConversationMoved
convs = Conversations(Path(sys.argv[1]))
name, sent = sys.argv[2], 0
for attempt in range(200):
    if sent == 5:
        break
    pending = convs.prepare_turn("c1", f"{name}-{sent}")
    try:
        convs.commit_turn(pending, [Event(Author.ASSISTANT, f"re {name}-{sent}")])
        sent += 1
    except ConversationMoved:
        pass
print(sent)
"""


def test_concurrent_sends_from_processes_leave_no_gaps_or_duplicates(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "a\n"})
    Conversations(tmp_path).open("c1", Mode.LIVE)
    env = git_env(PYTHONPATH=os.pathsep.join(sys.path))
    procs = [
        subprocess.Popen([sys.executable, "-c", SENDER, str(tmp_path), f"p{i}"],
                         stdout=subprocess.PIPE, env=env)
        for i in range(3)
    ]
    sent = [int(p.communicate()[0]) for p in procs]
    assert sent == [5, 5, 5]
    log = Conversations(tmp_path).log("c1")[1:]
    humans = [e.content for e in log[0::2]]
    assert sorted(humans) == sorted(f"p{i}-{n}" for i in range(3) for n in range(5))
    assert [e.content for e in log[1::2]] == [f"re {h}" for h in humans]


def test_live_diff_is_the_change_since_open_and_publish_is_refused(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"out-of-scope.txt": "x\n"}, parent=None)
    write(up.root, {"notes/a.md": "a\n"})
    in_scope = lambda: [e for e in scan(up.root) if e.path.startswith("notes/")]  # noqa: E731
    convs = Conversations(up.root)
    convs.open("l1", Mode.LIVE, entries=in_scope())
    write(up.root, {"notes/a.md": "a2\n"})
    convs.commit_turn(convs.prepare_turn("l1", "hi", entries=in_scope()), [])
    patch = convs.diff("l1")
    assert "notes/a.md" in patch and "out-of-scope" not in patch
    with pytest.raises(UsageError, match="only isolated work is published"):
        convs.publish("l1", "x")
    record = as_dict(convs.log("l1")[-1])
    assert record["author"] == "user" and record["commit"] == convs.head("l1")


def test_a_turn_that_loses_the_ref_restores_the_worktree_exactly(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"a.txt": "a\n", "b.txt": "b\n"}, parent=None)
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    wt = convs.worktree("c1")
    pending = convs.prepare_turn("c1", "loses")
    (wt / "a.txt").write_text("the loser's edit\n")  # its tools wrote
    (wt / "new/deep.txt").parent.mkdir()
    (wt / "new/deep.txt").write_text("the loser's new file\n")
    os.chmod(wt / "b.txt", 0o755)
    winner = git(up.root, "commit-tree", f"{pending.head}^{{tree}}", "-p", pending.head, "-m",
                 '{"author":"user","content":"moved by a writer without the lock"}')
    git(up.root, "update-ref", "refs/freshline/conversations/c1", winner)
    with pytest.raises(ConversationMoved):
        convs.commit_turn(pending, [Event(Author.ASSISTANT, "answer")])
    convs.abandon_turn(pending)
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(wt, "rev-parse", "HEAD") == winner
    assert (wt / "a.txt").read_text() == "a\n" and not (wt / "new").exists()
    assert not os.access(wt / "b.txt", os.X_OK)
