"""Opening beneath a root (`beneath`), on real trees: links inside the root are followed by
their text and lead where the system would lead, none leads out; what is opened is told
by its descriptor (a FIFO, a socket: never opened, never waited on); walks follow no link
and hold few descriptors however deep they go."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshline.beneath import (
    Kind,
    Outside,
    files_under,
    open_beneath,
    open_entry,
    open_inside,
    read_regular,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "a/b").mkdir(parents=True)
    (root / "a/b/f.md").write_text("inside\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out/f.md").write_text("outside\n")
    links = {"a/rel": "b/f.md", "a/up": "../a/b", "a/abs": str(root / "a/b/f.md"),
             "a/out": str(tmp_path / "out"), "a/climb": "../../out/f.md",
             "a/loop": "loop", "a/dangling": "nowhere/x.md", "a/self": "."}
    for rel, target in links.items():
        (root / rel).symlink_to(target)
    os.mkfifo(root / "a/fifo")
    return root


# path → (kind, where it led); Outside: refused
TABLE: list[tuple[str, tuple[Kind, str] | type[Outside]]] = [
    ("a/b/f.md", (Kind.FILE, "a/b/f.md")),
    ("a/rel", (Kind.FILE, "a/b/f.md")),
    ("a/up/f.md", (Kind.FILE, "a/b/f.md")),
    ("a/abs", (Kind.FILE, "a/b/f.md")),
    ("a/self/self/b", (Kind.FOLDER, "a/b")),
    ("", (Kind.FOLDER, "")),
    ("a/b/none.md", (Kind.MISSING, "a/b/none.md")),
    ("a/b/f.md/x", (Kind.MISSING, "a/b/f.md/x")),  # a file where a folder should be
    ("a/dangling", (Kind.MISSING, "a/nowhere/x.md")),
    ("a/fifo", (Kind.SPECIAL, "a/fifo")),
    ("a/out/f.md", Outside),
    ("a/climb", Outside),
    ("a/loop", Outside),
]


@pytest.mark.parametrize(("rel", "expected"), TABLE)
def test_links_lead_where_they_lead_inside_and_nowhere_outside(
    tree: Path, rel: str, expected: tuple[Kind, str] | type[Outside]
) -> None:
    if expected is Outside:
        with pytest.raises(Outside):
            open_beneath(tree, rel)
        return
    with open_beneath(tree, rel) as opened:
        assert (opened.kind, opened.rel) == expected
        assert (opened.fd >= 0) == (opened.kind in (Kind.FILE, Kind.FOLDER))
        if opened.kind is Kind.FILE:
            assert opened.read() == b"inside\n" and opened.read(3) == b"ins"


def test_without_following_a_link_is_refused(tree: Path) -> None:
    with open_beneath(tree, "a/b/f.md", follow=False) as opened:
        assert opened.kind is Kind.FILE
    for rel in ("a/rel", "a/up/f.md"):
        with pytest.raises(Outside, match="symbolic link"):
            open_beneath(tree, rel, follow=False)
    with open_inside(tree, tree / "a/b/f.md") as opened:
        assert opened.read() == b"inside\n"
    with pytest.raises(Outside):
        open_inside(tree, tree.parent / "out/f.md")


def test_a_socket_is_special_and_plain_reads_never_wait(tree: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tree / "a/sock"))
        assert open_beneath(tree, "a/sock").kind is Kind.SPECIAL
        assert read_regular(tree / "a/sock") is None
    assert read_regular(tree / "a/fifo") is None  # would block a plain open
    assert read_regular(tree / "a/rel") == b"inside\n"
    with open_beneath(tree, "a") as folder:
        assert open_entry(folder.fd, "fifo", "a/fifo").kind is Kind.SPECIAL
        assert open_entry(folder.fd, "rel", "a/rel").kind is Kind.MISSING  # never followed


def test_a_walk_follows_no_link_and_holds_few_descriptors(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    deep = root.joinpath(*["d"] * 300)
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("x")
    (root / "top.md").write_text("x")
    (root / "d/link").symlink_to(root)  # a walk never goes round it
    held = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    seen, most = [], 0
    with open_beneath(root, "") as top:
        for folder_fd, name, rel in files_under(top, lambda rel, folder: True):
            with open_entry(folder_fd, name, rel) as opened:
                seen.append(opened.rel)
            if held:
                most = max(most, len(os.listdir("/proc/self/fd")) - held)
    assert seen == ["top.md", "d/" * 300 + "bottom.md"]
    assert most < 10  # not one per level


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["l1", "a/l2", "a/b/l3"]),
                          st.sampled_from(["..", "../..", "a", "b", "f.md", "a/b/f.md",
                                           "../a/b", "l1", "../l1", "/ROOT/a", "/ROOT/../x"])),
                max_size=3, unique_by=lambda t: t[0]),
       st.sampled_from(["l1", "l1/f.md", "a/l2/f.md", "a/b/l3", "a/l2/b/f.md", "l1/b/f.md"]))
def test_opening_beneath_agrees_with_the_system_inside_the_root(
    tmp_path: Path, links: list[tuple[str, str]], rel: str
) -> None:
    root = tmp_path / "agree"
    if root.exists():
        for path in sorted(root.rglob("*"), key=lambda p: -len(p.parts)):
            path.unlink() if path.is_symlink() or path.is_file() else path.rmdir()
        root.rmdir()
    (root / "a/b").mkdir(parents=True)
    (root / "a/b/f.md").write_text("f")
    for name, target in links:
        (root / name).symlink_to(target.replace("/ROOT", str(root)))
    real = os.path.realpath(root / rel)
    inside = real == str(root) or real.startswith(str(root) + "/")
    try:
        opened = open_beneath(root, rel)
    except Outside:
        assert not inside or not os.path.exists(real)  # out, or a loop the system refuses
        return
    with opened:
        assert inside
        assert opened.rel == os.path.relpath(real, root).removeprefix(".")
        assert (opened.kind is Kind.MISSING) == (not os.path.exists(real))
