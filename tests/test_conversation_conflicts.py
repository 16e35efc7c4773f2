"""Conflicts from git, not from text: kinds as merge-tree reports them, and resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.conversation import Author, Conversations, Event, Mode
from freshline.conversation.conflicts import (
    Conflict,
    ConflictKind,
    by_kind,
    group,
    has_markers,
    is_resolved,
    kind_of,
    parse_merge_tree,
)
from freshline.conversation.git import Git
from freshline.errors import ConflictStop
from tests.conftest import git
from tests.test_conversation_support import Upstream

K = ConflictKind
TREE = "a" * 40


def record(paths: list[str], type_: str, message: str) -> bytes:
    return b"\0".join([str(len(paths)).encode(), *(p.encode() for p in paths),
                       type_.encode(), message.encode()]) + b"\0"


@pytest.mark.parametrize(
    ("type_", "message", "kind"),
    [
        ("Auto-merging", "Auto-merging a", None),
        ("CONFLICT (contents)", "CONFLICT (content): Merge conflict in a", K.CONTENT),
        ("CONFLICT (contents)", "CONFLICT (add/add): Merge conflict in a", K.ADD_ADD),
        ("CONFLICT (modify/delete)", "CONFLICT (modify/delete): b deleted in x", K.MODIFY_DELETE),
        ("CONFLICT (rename/delete)", "CONFLICT (rename/delete): c renamed", K.RENAME_DELETE),
        ("CONFLICT (rename/rename)", "CONFLICT (rename/rename): d renamed", K.RENAME_RENAME),
        ("CONFLICT (file/directory)", "CONFLICT (file/directory): in the way", K.FILE_DIRECTORY),
        ("CONFLICT (binary)", "warning: Cannot merge binary files: b", K.BINARY),
        ("CONFLICT (distinct modes)", "CONFLICT (distinct types): l had different types",
         K.DISTINCT_TYPES),
        ("CONFLICT(directory rename unclear split)", "CONFLICT (…)", K.OTHER),
        ("Path updated due to directory rename", "Path updated: x", None),
    ],
)
def test_kind_of_each_record_type(type_: str, message: str, kind: ConflictKind | None) -> None:
    assert kind_of(type_, message) is kind


def test_parse_clean_output_and_a_conflicted_path_no_message_names() -> None:
    assert parse_merge_tree(f"{TREE}\0".encode()).conflicts == ()
    out = f"{TREE}\0x\0y\0\0".encode() + record(["x"], "CONFLICT (contents)", "content")
    parsed = parse_merge_tree(out)
    assert parsed.tree == TREE
    assert parsed.conflicts == (Conflict(K.CONTENT, ("x",)), Conflict(K.OTHER, ("y",)))


def test_records_sharing_a_path_are_one_conflict_of_the_kind_needing_a_choice() -> None:
    out = (f"{TREE}\0bin\0\0".encode()
           + record(["bin"], "CONFLICT (binary)", "warning: Cannot merge binary files")
           + record(["bin"], "Auto-merging", "Auto-merging bin")
           + record(["bin"], "CONFLICT (contents)", "CONFLICT (add/add): Merge conflict"))
    assert parse_merge_tree(out).conflicts == (Conflict(K.BINARY, ("bin",)),)


kinds = st.sampled_from(ConflictKind)
names = st.sampled_from(["a", "b", "c", "d", "e"])


@given(st.lists(st.tuples(kinds, st.lists(names, min_size=1, max_size=3).map(tuple)),
                max_size=6))
def test_grouping_partitions_the_paths(found) -> None:
    conflicts = group(found)
    seen = [p for c in conflicts for p in c.paths]
    assert sorted(seen) == sorted({p for _, paths in found for p in paths})  # each once
    for c in conflicts:
        mine = [k for k, paths in found if set(paths) & set(c.paths)]
        assert c.kind in mine
        if any(k not in (K.CONTENT, K.ADD_ADD) for k in mine):
            assert c.kind not in (K.CONTENT, K.ADD_ADD)


MARKED = b"a\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n"


@pytest.mark.parametrize(
    ("conflict", "recorded", "present", "touched", "resolved"),
    [
        (Conflict(K.CONTENT, ("a",)), {"a"}, {"a": MARKED}, set(), False),
        (Conflict(K.CONTENT, ("a",)), {"a"}, {"a": b"merged\n"}, set(), True),
        (Conflict(K.CONTENT, ("a",)), {"a"}, {}, set(), True),  # deleted: no markers left
        (Conflict(K.CONTENT, ("a",)), {"a"}, {"a": MARKED}, {"a"}, False),
        (Conflict(K.MODIFY_DELETE, ("b",)), {"b"}, {"b": b"kept\n"}, set(), False),
        (Conflict(K.MODIFY_DELETE, ("b",)), {"b"}, {}, set(), True),  # deleted
        (Conflict(K.MODIFY_DELETE, ("b",)), {"b"}, {"b": b"kept\n"}, {"b"}, True),  # kept
        (Conflict(K.MODIFY_DELETE, ("b",)), {"b"}, {"b": MARKED}, {"b"}, False),
        (Conflict(K.RENAME_RENAME, ("d", "d1", "d2")), {"d1", "d2"},
         {"d1": b"x", "d2": b"x"}, set(), False),
        (Conflict(K.RENAME_RENAME, ("d", "d1", "d2")), {"d1", "d2"}, {"d1": b"x"}, set(), True),
        (Conflict(K.RENAME_DELETE, ("c", "c1")), {"c1"}, {"c1": b"x"}, {"c"}, True),
        (Conflict(K.FILE_DIRECTORY, ("f", "f~ours")), {"f~ours"}, {"f~ours": b"x", "f": None},
         set(), False),
        (Conflict(K.BINARY, ("bin",)), {"bin"}, {"bin": b"\0\1"}, set(), False),
        (Conflict(K.BINARY, ("bin",)), {"bin"}, {"bin": b"\0\1"}, {"bin"}, True),
    ],
)
def test_resolution_table(conflict, recorded, present, touched, resolved) -> None:
    assert is_resolved(conflict, recorded, present, touched) is resolved


def test_markers_only_at_line_starts() -> None:
    assert has_markers(MARKED) and has_markers(b">>>>>>>\n")
    assert not has_markers(b"text <<<<<<< mid-line\n") and not has_markers(b"<<<<<<<< eight\n")


# --- real merges -------------------------------------------------------------------------


def test_merge_tree_reports_every_kind_on_real_histories(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    base = up.commit("main", {"a": "a\n", "b": "b\n", "c": "c\n", "d": "d\n", "add/x": "x\n",
                              "bin": "\0base"}, parent=None)
    ours = up.commit("ours", {"a": "ours\n", "b": "ours\n", "c": None, "c1": "c\n", "d": None,
                              "d1": "d\n", "new": "ours\n", "f": "file\n", "bin": "\0ours"},
                     parent=base)
    theirs = up.commit("theirs", {"a": "theirs\n", "b": None, "c": None, "d": None,
                                  "d2": "d\n", "new": "theirs\n", "f/inner": "dir\n",
                                  "bin": "\0theirs"}, parent=base)
    merged = Git(up.root / ".git").merge_tree(ours, theirs)
    found = {c.kind: c.paths for c in merged.conflicts}
    assert found == {
        K.CONTENT: ("a",), K.MODIFY_DELETE: ("b",), K.RENAME_DELETE: ("c", "c1"),
        K.RENAME_RENAME: ("d", "d1", "d2"), K.ADD_ADD: ("new",),
        K.FILE_DIRECTORY: ("f", "f~" + ours), K.BINARY: ("bin",),
    }
    assert by_kind(merged.conflicts) == (
        f"content: a; add/add: new; modify/delete: b; rename/delete: c, c1; "
        f"rename/rename: d, d1, d2; file/directory: f, f~{ours}; binary: bin"
    )


def turn(convs: Conversations, cid: str, events: list[Event], edits: dict[str, str | None]) -> str:
    pending = convs.prepare_turn(cid, "go")
    for path, content in edits.items():
        target = convs.worktree(cid) / path
        if content is None:
            target.unlink()
        else:
            target.write_text(content)
    return convs.commit_turn(pending, events)


def test_seen_modify_delete_is_recorded_by_kind_and_blocks_publish(tmp_path: Path) -> None:
    """Seen: the agent edits two files, upstream deletes both; `sync --with-conflicts`
    spoke of markers that were not there, and publish brought both files back."""
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"CHANGES.rst": "changes\n", "tests/test_utils.py": "t = 1\n",
                       "other.txt": "o\n"}, parent=None)
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    edits = {"CHANGES.rst": "changes, edited\n", "tests/test_utils.py": "t = 2\n"}
    turn(convs, "c1", [Event(Author.ASSISTANT, "edited both")], edits)
    up.commit("main", {"CHANGES.rst": None, "tests/test_utils.py": None, "NEWS.rst": "news\n"})

    with pytest.raises(ConflictStop, match="modify/delete: CHANGES.rst, tests/test_utils.py"):
        convs.prepare_turn("c1", "refresh")
    record = convs.sync("c1", "main", with_conflicts=True)
    both = (Conflict(K.MODIFY_DELETE, ("CHANGES.rst",)),
            Conflict(K.MODIFY_DELETE, ("tests/test_utils.py",)))
    assert record is not None and record.conflicts == both
    assert record.paths == ("NEWS.rst",)  # git kept our versions: only NEWS.rst changed
    assert convs.unresolved_conflicts("c1") == list(both)
    with pytest.raises(ConflictStop) as stop:
        convs.publish("c1", "agent/x")
    assert "modify/delete: CHANGES.rst, tests/test_utils.py" in str(stop.value)
    assert stop.value.kinds == {"CHANGES.rst": "modify/delete",
                                "tests/test_utils.py": "modify/delete"}
    assert up.rev("refs/heads/agent/x") is None

    # An edit outside the tools is no choice; a deletion is, and so is a tool's write.
    turn(convs, "c1", [Event(Author.ASSISTANT, "touched")], {"CHANGES.rst": "outside\n"})
    assert len(convs.unresolved_conflicts("c1")) == 2
    write = Event(Author.TOOL, "kept", tool="write", changed=("tests/test_utils.py",))
    turn(convs, "c1", [write, Event(Author.ASSISTANT, "resolved")], {"CHANGES.rst": None})
    assert convs.unresolved_conflicts("c1") == []
    published = convs.publish("c1", "agent/x")
    files = git(up.root, "ls-tree", "-r", "--name-only", published).split()
    assert files == ["NEWS.rst", "other.txt", "tests/test_utils.py"]
