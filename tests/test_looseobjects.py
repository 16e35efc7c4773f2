"""Objects and refs a checkpoint reads and writes in-process (`conversation/looseobjects.py`),
checked against git itself on real repositories."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.conversation.looseobjects import ObjectDir, ref_value, swap_ref
from freshline.conversation.objects import object_id
from tests.conftest import git

REF = "refs/freshline/conversations/c1"


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    git(tmp_path, "init", "--quiet", "--bare", "repo.git")
    return tmp_path / "repo.git"


def test_written_objects_are_gits_own(bare: Path) -> None:
    store = ObjectDir(bare / "objects")
    blob = store.write("blob", b"hello\n")
    assert blob == git(bare, "hash-object", "--stdin", input=b"hello\n")
    tree = store.write("tree", b"100644 a.md\0" + bytes.fromhex(blob))
    assert git(bare, "cat-file", "-p", tree) == f"100644 blob {blob}\ta.md"
    git(bare, "fsck", "--strict")  # every object sound, in git's own eyes
    assert store.read(blob) == ("blob", b"hello\n")
    path = bare / "objects" / blob[:2] / blob[2:]
    assert oct(path.stat().st_mode & 0o777) == "0o444"  # read-only, as git leaves them
    assert store.write("blob", b"hello\n") == blob  # again: the same object, in place
    assert not list((bare / "objects" / blob[:2]).glob("tmp_obj_*"))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.binary(max_size=64), min_size=1, max_size=30, unique=True))
def test_has_answers_as_git_for_packed_loose_and_absent_objects(
    tmp_path_factory: pytest.TempPathFactory, contents: list[bytes]
) -> None:
    bare = tmp_path_factory.mktemp("packs") / "repo.git"
    git(bare.parent, "init", "--quiet", "--bare", bare.name)
    half = len(contents) // 2
    packed = [git(bare, "hash-object", "-w", "--stdin", input=c) for c in contents[:half]]
    if packed:
        git(bare, "pack-objects", "-q", str(bare / "objects" / "pack" / "pack"),
            input="".join(f"{oid}\n" for oid in packed).encode())
        git(bare, "prune-packed")
    store = ObjectDir(bare / "objects")
    loose = [store.write("blob", c) for c in contents[half:]]
    absent = object_id("blob", b"never written " + os.urandom(8))
    assert all(store.has(oid) for oid in packed + loose) and not store.has(absent)
    assert all(store.read(oid) is None for oid in packed)  # packed: git reads those


def test_an_alternates_objects_count_as_held(tmp_path: Path, bare: Path) -> None:
    git(tmp_path, "init", "--quiet", "--bare", "user.git")
    theirs = git(tmp_path / "user.git", "hash-object", "-w", "--stdin", input=b"tracked\n")
    alternates = bare / "objects" / "info" / "alternates"
    alternates.write_text(os.path.relpath(tmp_path / "user.git" / "objects",
                                          bare / "objects") + "\n")
    store = ObjectDir(bare / "objects")
    assert store.has(theirs)  # borrowed: a checkpoint writes no copy of it


def test_a_damaged_loose_object_is_refused(bare: Path) -> None:
    store = ObjectDir(bare / "objects")
    oid = object_id("blob", b"abc")
    folder = bare / "objects" / oid[:2]
    folder.mkdir()
    (folder / oid[2:]).write_bytes(zlib.compress(b"blob 9\0abc"))
    with pytest.raises(ValueError, match="damaged"):
        store.read(oid)


def test_the_ref_moves_by_compare_and_swap_through_gits_lock(bare: Path) -> None:
    empty = git(bare, "mktree", input=b"")
    one = git(bare, "commit-tree", empty, "-m", "1")
    two = git(bare, "commit-tree", empty, "-m", "2")
    git(bare, "update-ref", REF, one)
    git(bare, "pack-refs", "--all")  # the value read from packed-refs
    assert ref_value(bare, REF) == one and ref_value(bare, REF + "x") is None
    assert swap_ref(bare, REF, two, "0" * 40) is False  # not at that value: nothing moves
    assert git(bare, "rev-parse", REF) == one
    assert swap_ref(bare, REF, two, one) is True
    assert git(bare, "rev-parse", REF) == two and ref_value(bare, REF) == two
    lock = bare / (REF + ".lock")
    lock.write_text("")  # another writer holds it: left to git
    assert swap_ref(bare, REF, one, two) is None
    lock.unlink()
    git(bare, "fsck", "--strict")
