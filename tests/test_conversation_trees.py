"""Tree writing: the incremental writer against git's own index, and live deltas."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshline.conversation import Conversations, LiveDelta, Mode
from freshline.conversation.git import EMPTY_TREE, Git
from freshline.conversation.treewrite import update_tree
from tests.conftest import git
from tests.test_conversation_support import scan

PATHS = ["a", "b.txt", "d", "d/a", "d/b", "d/e", "d/e/f", "d/e/g", "d-x", "d.x", "z/y/x/w", "é.txt"]
MODES = ["100644", "100755", "120000"]


def index_oracle(g: Git, files: dict[str, tuple[str, str]]) -> str:
    """The tree git itself writes for `files` through an index."""
    with g.temp_index() as index:
        index.index_info((mode, oid, path) for path, (mode, oid) in files.items())
        return index.write_tree()


@st.composite
def tree_changes(draw):
    blobs = st.integers(0, 2)
    entry = st.tuples(st.sampled_from(MODES), blobs)
    base = draw(st.dictionaries(st.sampled_from(PATHS), entry, max_size=8))
    changes = draw(st.dictionaries(st.sampled_from(PATHS), st.one_of(st.none(), entry),
                                   max_size=5))
    return base, changes


def consistent(files: dict) -> bool:
    """No path is both a file and a directory."""
    return not any(other.startswith(p + "/") for p in files for other in files)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tree_changes())
def test_update_tree_matches_git_index(bare: Git, case) -> None:
    base, changes = case
    after = {p: e for p, e in {**base, **changes}.items() if e is not None}
    if not consistent(base) or not consistent(after):
        return
    oids = [bare.hash_object_write(data=f"blob {i}\n".encode()) for i in range(3)]
    resolve = lambda files: {p: (m, oids[b]) for p, (m, b) in files.items()}  # noqa: E731
    base_tree = index_oracle(bare, resolve(base)) if base else None
    delta = {p: None if e is None else (e[0], oids[e[1]]) for p, e in changes.items()}
    assert update_tree(bare, base_tree, delta) == index_oracle(bare, resolve(after))


def test_update_tree_edges(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare")
    g = Git(tmp_path)
    blob = g.hash_object_write(data=b"x\n")
    assert update_tree(g, None, {}) == EMPTY_TREE
    tree = update_tree(g, None, {"a/b/c": ("100644", blob)})
    assert update_tree(g, tree, {"a/b/c": None}) == EMPTY_TREE
    replaced = update_tree(g, tree, {"a": ("100644", blob), "a/b/c": None})
    assert g.text("ls-tree", "-r", replaced) == f"100644 blob {blob}\ta"


def test_live_delta_gives_the_same_tree_as_full_entries(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"dir{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"dir{i % 3}" / f"f{i}.md").write_text(f"{i}\n")
    convs = Conversations(tmp_path)
    convs.open("n", Mode.LIVE, entries=scan(tmp_path))
    before = {e.path: e for e in scan(tmp_path)}
    (tmp_path / "dir0" / "f0.md").write_text("changed\n")
    (tmp_path / "dir1" / "f1.md").unlink()
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "n.md").write_text("new\n")
    after = {e.path: e for e in scan(tmp_path)}
    changed = tuple(e for p, e in after.items() if before.get(p) != e)
    removed = tuple(p for p in before if p not in after)
    by_delta = convs.prepare_turn("n", "x", delta=LiveDelta(changed, removed)).tree
    by_entries = convs.prepare_turn("n", "x", entries=after.values()).tree
    assert by_delta == by_entries
    assert git(convs.git_dir, "cat-file", "blob", f"{by_delta}:new/n.md") == "new"


def test_a_file_changed_after_its_scan_is_written_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("scanned\n")
    entries = scan(tmp_path)
    (tmp_path / "a.md").write_text("changed since the scan\n")
    convs = Conversations(tmp_path)
    root = convs.open("n", Mode.LIVE, entries=entries)
    assert git(convs.git_dir, "cat-file", "blob", f"{root}:a.md") == "changed since the scan"


@pytest.mark.parametrize("name", ["with space.md", "tab\there.md", "ünï.md"])
def test_unusual_names_survive(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("x\n")
    convs = Conversations(tmp_path)
    root = convs.open("n", Mode.LIVE, entries=scan(tmp_path))
    listed = git(convs.git_dir, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only",
                 "-z", root)
    assert listed.rstrip("\0") == name


def test_a_file_deleted_after_its_scan_leaves_the_tree(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a\n")
    (tmp_path / "b.md").write_text("b\n")
    entries = scan(tmp_path)
    (tmp_path / "b.md").unlink()
    convs = Conversations(tmp_path)
    root = convs.open("n", Mode.LIVE, entries=entries)
    assert git(convs.git_dir, "ls-tree", "--name-only", root) == "a.md"
