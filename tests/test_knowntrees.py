"""Trees kept known with each entry's bytes (`conversation/knowntrees.py`): a tree changed
at a few entries is byte for byte the tree written whole, and both are git's."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.conversation.knowntrees import TREE_MODE, Entry, KnownTrees, Tree
from tests.conftest import git

NAMES = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
                min_size=1, max_size=6).filter(lambda n: n not in (".", ".."))
OIDS = st.binary(min_size=20, max_size=20).map(bytes.hex)
ENTRIES = st.dictionaries(NAMES, st.tuples(st.sampled_from(["100644", "100755", TREE_MODE,
                                                             "120000"]), OIDS), max_size=12)


@given(ENTRIES, ENTRIES, st.lists(NAMES, max_size=4))
def test_a_tree_changed_at_some_names_is_the_tree_written_whole(
    before: dict[str, Entry], more: dict[str, Entry], gone: list[str]
) -> None:
    after = {k: v for k, v in {**before, **more}.items() if k not in gone}
    touched = [*more, *gone]
    changed = Tree.of(before).changed(after, touched)
    assert changed.raw() == Tree.of(after).raw()
    assert Tree.parse(changed.raw()) == Tree.of(after)
    assert changed.order() == [n for n in Tree.parse(changed.raw()).entries]


@settings(max_examples=8, deadline=None)
@given(st.dictionaries(NAMES, st.sampled_from(["100644", "100755", TREE_MODE]), min_size=1,
                       max_size=8))
def test_the_bytes_are_gits_own(
    tmp_path_factory: pytest.TempPathFactory, modes: dict[str, str]
) -> None:
    repo = tmp_path_factory.mktemp("trees") / "repo.git"
    git(repo.parent, "init", "--quiet", "--bare", repo.name)
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"x\n")
    empty = git(repo, "mktree", input=b"")
    entries = {n: (m, empty if m == TREE_MODE else blob) for n, m in modes.items()}
    listing = "".join(f"{m} {'tree' if m == TREE_MODE else 'blob'} {o}\t{n}\0"
                      for n, (m, o) in entries.items())
    oid = git(repo, "mktree", "-z", input=listing.encode("utf-8", "surrogateescape"))
    raw = Tree.of(entries).raw()
    assert hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest() == oid


def test_known_trees_keep_the_latest_within_their_entries() -> None:
    known = KnownTrees(limit=3)
    two = Tree.of({"a": ("100644", "0" * 40), "b": ("100644", "1" * 40)})
    one = Tree.of({"c": ("100644", "2" * 40)})
    known.put("t1", two)
    known.put("t2", one)
    assert known.get("t1") is two  # used: kept
    known.put("t3", one)
    assert (known.get("t1"), known.get("t2"), known.get("t3")) == (two, None, one)
