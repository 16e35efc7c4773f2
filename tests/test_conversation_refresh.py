"""Isolated conversations against a moving checkout target: refresh, conflicts, sync, publish."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from freshline.conversation import Author, Conflict, ConflictKind, Conversations, Event, Mode
from freshline.errors import ConflictStop, NotFoundError, SyncRequired, UsageError
from tests.conftest import git
from tests.test_conversation_support import Upstream

BASE = {
    "a.txt": "one\ntwo\nthree\n",
    "b.txt": "bee\n",
    "keep.txt": "never touched by the conversation\n",
    "lib/x.py": "x = 1\n",
}


@pytest.fixture
def up(tmp_path: Path) -> Upstream:
    upstream = Upstream(tmp_path / "ws")
    upstream.commit("main", BASE, parent=None)
    return upstream


def turn(convs: Conversations, cid: str, message: str, edits: dict[str, str] | None = None,
         **kwargs) -> str:
    """One full send: prepare, let the 'agent' write `edits` into the worktree, commit."""
    pending = convs.prepare_turn(cid, message, **kwargs)
    for path, content in (edits or {}).items():
        target = convs.worktree(cid) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return convs.commit_turn(pending, [Event(Author.ASSISTANT, f"answer to {message}")])


def test_reported_case_refresh_80_commits_behind(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    edited = "one\nTWO by agent\nthree\n"
    head1 = turn(convs, "c1", "edit a", {"a.txt": edited})
    up.commit("main", {"new.txt": "new\n", "b.txt": "bee upstream\n", "keep.txt": None})
    target = up.chain("main", 79)

    pending = convs.prepare_turn("c1", "what changed?", path_filter=lambda p: "/" not in p)
    assert pending.refresh is not None
    assert pending.refresh.paths == ("b.txt", "keep.txt", "new.txt")
    assert pending.refresh.to == target and pending.refresh.target == "refs/heads/main"
    head2 = convs.commit_turn(pending, [Event(Author.ASSISTANT, "I see new.txt")])

    human = up.parents(head2)[0]
    assert up.parents(human) == [head1, target]
    assert up.show(human, "a.txt") == edited
    assert up.show(human, "b.txt") == "bee upstream\n"
    assert up.show(human, "new.txt") == "new\n"
    assert up.show(human, "keep.txt") is None
    assert up.show(human, "filler/78.txt") == "78\n"
    wt = convs.worktree("c1")
    assert (wt / "new.txt").read_text() == "new\n" and not (wt / "keep.txt").exists()
    assert git(wt, "rev-parse", "HEAD") == head2

    log = convs.log("c1")
    assert [e.author for e in log] == [Author.SYSTEM] + [Author.USER, Author.ASSISTANT] * 2
    assert [e.content for e in log][1::2] == ["edit a", "what changed?"]
    assert log[3].refresh == pending.refresh and log[-1].commit == head2
    patch = convs.diff("c1")
    assert "a.txt" in patch and "TWO by agent" in patch
    for upstream_path in ("b.txt", "new.txt", "keep.txt", "filler/"):
        assert upstream_path not in patch

    assert convs.prepare_turn("c1", "again").refresh is None  # target unchanged: nothing


def test_conflict_stops_with_paths_and_moves_nothing(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    head = turn(convs, "c1", "edit", {"a.txt": "one\nOURS\nthree\n"})
    up.commit("main", {"a.txt": "one\nTHEIRS\nthree\n", "new.txt": "n\n"})
    wt = convs.worktree("c1")
    (wt / "scratch.txt").write_text("unrecorded edit\n")

    with pytest.raises(ConflictStop) as stop:
        convs.prepare_turn("c1", "hello")
    assert stop.value.paths == ["a.txt"] and stop.value.exit_code == 3
    assert convs.head("c1") == head
    assert git(wt, "rev-parse", "HEAD") == head
    assert (wt / "a.txt").read_text() == "one\nOURS\nthree\n"
    assert not (wt / "new.txt").exists() and (wt / "scratch.txt").exists()


def test_unrelated_target_stops_without_paths(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    up.commit("main", {"other.txt": "unrelated root\n"}, parent=None)
    with pytest.raises(ConflictStop) as stop:
        convs.prepare_turn("c1", "hello")
    assert stop.value.paths == []


def test_rebased_target_requires_sync_then_sync_merges(up: Upstream) -> None:
    convs = Conversations(up.root)
    base = up.rev("main")
    convs.open("c1", Mode.ISOLATED)
    up.commit("main", {"b.txt": "bee 2\n"})
    turn(convs, "c1", "first", {"lib/x.py": "x = 2\n"})
    rewritten = up.commit("main", {"b.txt": "bee 2\n", "c.txt": "c\n"}, parent=base)

    head = convs.head("c1")
    with pytest.raises(SyncRequired, match="sync c1 REV") as stop:
        convs.prepare_turn("c1", "hello")
    assert stop.value.exit_code == 4 and convs.head("c1") == head

    record = convs.sync("c1", "main")
    assert record is not None and record.to == rewritten and record.conflicts == ()
    synced = convs.head("c1")
    assert up.parents(synced) == [head, rewritten]
    assert up.show(synced, "c.txt") == "c\n" and up.show(synced, "lib/x.py") == "x = 2\n"
    assert convs.log("c1")[-1].sync == record
    assert convs.sync("c1", "main") is None  # already merged
    assert convs.sync("c1", base or "") is None  # an older rev: already contained
    with pytest.raises(NotFoundError):
        convs.sync("c1", "no-such-rev")
    pending = convs.prepare_turn("c1", "hello")
    assert pending.refresh is None and pending.merges == (record,)  # announced once
    convs.commit_turn(pending, [])
    assert convs.prepare_turn("c1", "again").merges == ()


def test_a_failed_send_is_prepared_again_cleanly(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    turn(convs, "c1", "edit", {"a.txt": "one\nmine\nthree\n"})
    up.commit("main", {"b.txt": "bee upstream\n"})
    first = convs.prepare_turn("c1", "the backend will fail")  # the worktree moves; no commit
    assert (convs.worktree("c1") / "b.txt").read_text() == "bee upstream\n"
    again = convs.prepare_turn("c1", "retry")
    assert again.refresh is not None and again.tree == first.tree
    assert again.parents == first.parents and again.merges == (again.refresh,)
    head = convs.commit_turn(again, [])
    assert up.show(head, "a.txt") == "one\nmine\nthree\n"


def test_sync_with_conflicts_blocks_publish_until_resolved(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    turn(convs, "c1", "edit", {"a.txt": "one\nOURS\nthree\n"})
    theirs = up.commit("main", {"a.txt": "one\nTHEIRS\nthree\n"})
    with pytest.raises(ConflictStop, match=r"conflicts in 1 path: content: a.txt") as stop:
        convs.sync("c1", "main")
    assert stop.value.kinds == {"a.txt": "content"}

    record = convs.sync("c1", "main", with_conflicts=True)
    content = Conflict(ConflictKind.CONTENT, ("a.txt",))
    assert record is not None and record.conflicts == (content,)
    marked = (convs.worktree("c1") / "a.txt").read_text()
    assert "<<<<<<<" in marked and ">>>>>>>" in marked
    assert convs.unresolved_conflicts("c1") == [content]
    with pytest.raises(ConflictStop, match="unresolved conflicts \\(content: a.txt\\)") as stop:
        convs.publish("c1", "work")
    assert stop.value.exit_code == 3 and stop.value.kinds == {"a.txt": "content"}
    assert up.rev("refs/heads/work") is None

    turn(convs, "c1", "resolve", {"a.txt": "one\nOURS and THEIRS\nthree\n"})
    assert convs.unresolved_conflicts("c1") == []
    published = convs.publish("c1", "work")
    assert up.parents(published) == [theirs]
    assert git(up.root, "diff", "--name-only", theirs, published) == "a.txt"


def test_publish_fast_forwards_and_shows_only_own_work(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    turn(convs, "c1", "edit", {"lib/x.py": "x = 10\n"})
    first = convs.publish("c1", "feature/c1")
    assert convs.publish("c1", "feature/c1") == first  # nothing new: unchanged
    up.commit("main", {"b.txt": "bee upstream\n"})
    target = up.chain("main", 3)
    turn(convs, "c1", "more", {"lib/y.py": "y = 1\n"})
    second = convs.publish("c1", "feature/c1")
    assert up.parents(second) == [first, target]
    assert git(up.root, "merge-base", "--is-ancestor", first, second) == ""
    own = git(up.root, "diff", "--name-only", target, second).split()
    assert own == ["lib/x.py", "lib/y.py"]
    up.commit("other", {"z": "z\n"}, parent=None)
    with pytest.raises(UsageError, match="not a publication"):
        convs.publish("c1", "other")
    with pytest.raises(UsageError, match="checked out"):
        convs.publish("c1", "main")


def test_exec_bit_residue_is_normalized_and_deliberate_chmod_kept(up: Upstream) -> None:
    scripts = {f"bin/s{i}": f"#!/bin/sh\necho {i}\n" for i in range(1, 5)}
    up.commit("main", scripts, modes=dict.fromkeys(scripts, "100755"))
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    wt = convs.worktree("c1")
    pending = convs.prepare_turn("c1", "flip")
    for path in scripts:
        os.chmod(wt / path, 0o644)  # residue: content unchanged, executable bit lost
    convs.commit_turn(pending, [Event(Author.ASSISTANT, "done")])
    for path in scripts:  # normalized at once: recorded as before, and the files follow
        assert up.mode(convs.head("c1"), path) == "100755" and os.access(wt / path, os.X_OK)

    # Residue an older freshline recorded (an event tree given as is) is normalized at
    # the next merge, against the refresh base.
    pending = convs.prepare_turn("c1", "old residue")
    for path in scripts:
        os.chmod(wt / path, 0o644)
    residue = Event(Author.ASSISTANT, "recorded as is", tree=convs.snapshot_worktree("c1"))
    convs.commit_turn(pending, [residue])
    assert up.mode(convs.head("c1"), "bin/s1") == "100644"
    target = up.commit("main", {"bin/s1": "#!/bin/sh\necho upstream\n"},
                       modes={"bin/s1": "100755"})
    pending = convs.prepare_turn("c1", "refresh")
    assert pending.refresh is not None
    assert pending.refresh.normalized == tuple(sorted(scripts))
    head = convs.commit_turn(pending, [])
    assert up.parents(head) == [up.parents(head)[0], target]
    for path in scripts:
        assert up.mode(head, path) == "100755"
        assert os.access(wt / path, os.X_OK)
    assert up.show(head, "bin/s1") == "#!/bin/sh\necho upstream\n"

    pending = convs.prepare_turn("c1", "chmod on purpose")
    os.chmod(wt / "bin/s2", 0o644)
    tool = Event(Author.TOOL, "chmod -x bin/s2", tool="chmod", args={"path": "bin/s2"},
                 result="ok", mode_changes=("bin/s2",))
    convs.commit_turn(pending, [tool, Event(Author.ASSISTANT, "made s2 plain")])
    up.commit("main", {"bin/s3": "#!/bin/sh\necho three\n"}, modes={"bin/s3": "100755"})
    pending = convs.prepare_turn("c1", "refresh again")
    assert pending.refresh is not None and pending.refresh.normalized == ()
    head = convs.commit_turn(pending, [])
    assert up.mode(head, "bin/s2") == "100644" and up.mode(head, "bin/s3") == "100755"


def test_stray_exec_bit_between_turns_is_never_recorded_diffed_or_published(
    up: Upstream,
) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    wt = convs.worktree("c1")
    turn(convs, "c1", "edit", {"lib/x.py": "x = 2\n"})
    os.chmod(wt / "a.txt", 0o755)  # outside the tools, between refreshes
    os.chmod(wt / "lib/x.py", 0o755)  # an edited file too
    pending = convs.prepare_turn("c1", "next")
    head = convs.commit_turn(pending, [Event(Author.ASSISTANT, "ok")])
    assert up.mode(head, "a.txt") == "100644" and up.mode(head, "lib/x.py") == "100644"
    assert not os.access(wt / "a.txt", os.X_OK)
    assert "mode" not in convs.diff("c1") and "a.txt" not in convs.diff("c1")
    published = convs.publish("c1", "agent/x")
    assert git(up.root, "diff", "--name-only", up.rev("main") or "", published) == "lib/x.py"
    assert up.mode(published, "a.txt") == "100644"


def test_target_is_the_feature_branch_checked_out_at_open(up: Upstream) -> None:
    up.commit("feature", {"f.txt": "feature\n"}, parent=up.rev("main"))
    up.switch("feature")
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    assert convs.log("c1")[0].root.target == "refs/heads/feature"
    up.switch("main")  # what is checked out later does not matter
    up.commit("main", {"b.txt": "main moved\n"})
    assert convs.prepare_turn("c1", "hello").refresh is None
    moved = up.commit("feature", {"f.txt": "feature moved\n"})
    pending = convs.prepare_turn("c1", "hello")
    assert pending.refresh is not None and pending.refresh.to == moved


def test_explicit_target_and_fixed_commit(up: Upstream) -> None:
    first = up.rev("main")
    up.commit("main", {"b.txt": "2\n"})
    convs = Conversations(up.root)
    convs.open("fixed", Mode.ISOLATED, target=first)
    root = convs.log("fixed")[0].root
    assert root.target == first and root.base == first
    up.commit("main", {"b.txt": "3\n"})
    assert convs.prepare_turn("fixed", "hi").refresh is None  # a commit never moves
    with pytest.raises(UsageError):
        convs.open("fixed", Mode.ISOLATED)
    with pytest.raises(NotFoundError):
        convs.open("other", Mode.ISOLATED, target="no-such-branch")
    assert convs.ids() == ["fixed"]
    up.commit("feature", {"f": "f\n"}, parent=first)
    convs.open("named", Mode.ISOLATED, target="feature")
    assert convs.log("named")[0].root.target == "refs/heads/feature"


def test_old_commits_are_never_rewritten(up: Upstream) -> None:
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    turn(convs, "c1", "edit", {"a.txt": "changed\n"})
    convs.publish("c1", "pub")
    up.chain("main", 5)
    before = {c: git(up.root, "cat-file", "commit", c) for c in up.reachable()}
    turn(convs, "c1", "refreshing turn", {"lib/x.py": "x = 3\n"})
    convs.publish("c1", "pub")
    after = up.reachable()
    assert set(before) <= after
    assert all(git(up.root, "cat-file", "commit", c) == body for c, body in before.items())


def test_deleted_target_branch_requires_sync(up: Upstream) -> None:
    up.commit("feature", {"f.txt": "f\n"}, parent=up.rev("main"))
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED, target="feature")
    git(up.root, "update-ref", "-d", "refs/heads/feature")
    with pytest.raises(SyncRequired, match="feature no longer exists"):
        convs.prepare_turn("c1", "hello")
    assert convs.prepare_turn("c1", "hello", refresh=False).refresh is None


def test_seen_sync_to_a_rewritten_target_announces_only_what_changed_in_the_agents_tree(
    up: Upstream,
) -> None:
    """Seen: `work` reset to main~10 plus one commit; the sync changed 2 paths in the
    agent's tree but announced 13 (the old → new target diff, dropped commits included)."""
    for i in range(10):
        up.commit("main", {f"f{i}.txt": f"{i}\n"})
    git(up.root, "branch", "work", "main")
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED, target="work")
    turn(convs, "c1", "edit", {"a.txt": "one\nagent\nthree\n"})
    up.commit("work", {"g.txt": "g\n", "b.txt": "bee rewritten\n"},
              parent=up.rev("main~10"))
    with pytest.raises(SyncRequired):
        convs.prepare_turn("c1", "hello")
    before = convs.head("c1")
    record = convs.sync("c1", "work")
    assert record is not None and record.paths == ("b.txt", "g.txt")
    after = convs.head("c1")
    assert git(up.root, "diff", "--name-only", before, after).split() == ["b.txt", "g.txt"]
    pending = convs.prepare_turn("c1", "next")
    assert pending.merges == (record,)
