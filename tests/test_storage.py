"""Storage that stays small: packed objects, pointer blobs, untracked files kept out of the
user's repository, and sessions of other agents' channels writing no tree at all.

Sizes are measured on real git repositories and compared with each other, never with a
clock.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.context import Channel
from freshline.conversation.git import Git
from freshline.conversation.objects import MAX_PACKS, PackSink, object_id, pack_count
from freshline.conversation.pointer import blob_id, parse_pointer, pointer, recorded_oid
from freshline.conversation.storage import disk_usage
from freshline.session import SessionManager

from .conftest import Workspace, git, hook_answer

PRIVATE = Path(".freshline") / "conversations.git"


def loose_objects(git_dir: Path) -> int:
    """How many loose objects a repository holds."""
    objects = git_dir / "objects"
    if not objects.is_dir():
        return 0
    return sum(len(os.listdir(d)) for d in objects.iterdir() if len(d.name) == 2)


def packed_ids(git_dir: Path) -> set[str]:
    """The ids of every object in the repository's own packs (never its alternates')."""
    ids: set[str] = set()
    for idx in (git_dir / "objects" / "pack").glob("*.idx"):
        out = git(git_dir, "show-index", input=idx.read_bytes())
        ids.update(line.split()[1] for line in out.splitlines())
    return ids


def fill(ws: Workspace, count: int, folders: int = 50, size: int = 40) -> None:
    """`count` notes spread over `folders` folders under notes/."""
    for i in range(count):
        ws.write(f"notes/f{i % folders}/n{i}.md", f"note {i} " + "x" * size + "\n")


def chat(ws: Workspace) -> tuple[SessionManager, str]:
    manager = SessionManager(ws.config())
    return manager, manager.new("notes", channel=Channel.CHAT).id


def test_a_5000_file_first_turn_leaves_under_100_loose_objects(ws: Workspace) -> None:
    ws.configure({"notes": {"include": ["notes"]}})
    fill(ws, 5000)
    manager, sid = chat(ws)
    try:
        send(manager, sid, "what is here?", get_backend("echo"))
    finally:
        manager.close()
    private = ws.root / PRIVATE
    assert loose_objects(private) < 100
    assert len(packed_ids(private)) > 5000  # every note is there, packed
    assert "missing" not in git(private, "fsck", "--connectivity-only")


def test_a_file_above_the_cap_is_recorded_as_a_pointer(ws: Workspace) -> None:
    ws.configure({"notes": {"include": ["notes"]}})
    (ws.root / "freshline.toml").write_text(
        (ws.root / "freshline.toml").read_text() + "[conversations]\nmax_blob_mb = 1\n"
    )
    big = os.urandom(3 * 1024 * 1024 // 2)  # 1.5 MiB, incompressible
    ws.write("notes/big.bin", big)
    ws.write("notes/small.md", "small\n")
    manager, sid = chat(ws)
    try:
        send(manager, sid, "one", get_backend("echo"))
        ws.write("notes/big.bin", big + b"more")
        send(manager, sid, "two", get_backend("echo"))
        head = manager.conversations.head(sid)
    finally:
        manager.close()
    private = ws.root / PRIVATE
    recorded = git(private, "cat-file", "blob", f"{head}:notes/big.bin").encode() + b"\n"
    assert parse_pointer(recorded) == (blob_id(big + b"more"), len(big) + 4)
    assert git(private, "cat-file", "blob", f"{head}:notes/small.md") == "small"
    assert disk_usage(private) < len(big) // 4  # neither version was copied


def test_untracked_files_never_reach_the_users_object_store(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "repo")
    ws.root.mkdir()
    ws.configure({"notes": {"include": ["notes"]}})
    ws.write("notes/tracked.md", "tracked\n")
    git(ws.root, "init", "-q", "--initial-branch=main")
    git(ws.root, "add", "notes/tracked.md")
    git(ws.root, "commit", "-q", "-m", "start")
    user = ws.root / ".git"
    before = disk_usage(user / "objects")
    ws.write("notes/untracked.md", "not committed\n")
    (ws.root / "freshline.toml").write_text(
        (ws.root / "freshline.toml").read_text() + "[conversations]\nmax_blob_mb = 1\n"
    )
    ws.write("notes/big.bin", os.urandom(2 * 1024 * 1024))  # untracked and above the cap
    manager, sid = chat(ws)
    try:
        send(manager, sid, "one", get_backend("echo"))
        ws.write("notes/untracked.md", "edited\n")
        ws.write("notes/big.bin", os.urandom(2 * 1024 * 1024))
        send(manager, sid, "two", get_backend("echo"))
        head = manager.conversations.head(sid)
    finally:
        manager.close()
    private = ws.root / PRIVATE
    for text in ("not committed\n", "edited\n"):
        oid = blob_id(text.encode())
        assert oid in packed_ids(private)
        code = Git(user).run_status("cat-file", "-e", oid)[0]
        assert code != 0, "an untracked file's content reached the user's repository"
    assert disk_usage(user / "objects") == before
    assert git(ws.root, "for-each-ref", "refs/freshline") == ""  # nothing crowds `log --all`
    tracked = blob_id(b"tracked\n")
    assert tracked not in packed_ids(private)  # borrowed from the user's repository
    assert git(private, "cat-file", "blob", f"{head}:notes/tracked.md") == "tracked"
    assert git(private, "rev-list", "--parents", "-n1", manager.conversations.log(sid)[0].commit
               or "").count(" ") == 0  # the root names its base without depending on it
    assert "missing" not in git(private, "fsck", "--connectivity-only")


def test_hook_and_mcp_sessions_record_no_conversation(ws: Workspace) -> None:
    ws.configure({"notes": {"include": ["notes"]}})
    fill(ws, 300)
    manager = SessionManager(ws.config())
    try:
        for channel in (Channel.HOOK, Channel.MCP):
            s = manager.new("notes", mode="live", external_id=f"{channel}:1", channel=channel)
            turn = manager.prepare(s.id, "", conversation=False, channel=channel)
            assert turn.manifest is not None
            turn.accept()
            assert not manager.conversations.exists(s.id)
            assert not manager.get(s.id).records_conversation
    finally:
        manager.close()
    private = ws.root / PRIVATE
    assert not private.exists() or (loose_objects(private) == 0 and not packed_ids(private))


def test_a_later_turn_adds_about_what_changed(ws: Workspace) -> None:
    ws.configure({"notes": {"include": ["notes"]}})
    fill(ws, 2000, folders=40, size=400)
    manager, sid = chat(ws)
    private = ws.root / PRIVATE
    try:
        send(manager, sid, "one", get_backend("echo"))
        first = disk_usage(private)
        changed = 0
        for i in range(0, 400, 40):  # ten notes in one folder, rewritten
            text = os.urandom(4000).hex()
            ws.write(f"notes/f0/n{i}.md", text)
            changed += len(text)
        send(manager, sid, "two", get_backend("echo"))
        grown = disk_usage(private) - first
    finally:
        manager.close()
    assert grown <= changed, (grown, changed)


# --- the object writer and pointers (pure or nearly) ---------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=6))
def test_packed_objects_read_back_as_written(bare: Git, blobs: list[bytes]) -> None:
    with PackSink(bare) as out:
        ids = [out.add("blob", data) for data in blobs]
    assert ids == [object_id("blob", data) for data in blobs]
    for oid, data in zip(ids, blobs, strict=True):
        assert bare.run("cat-file", "blob", oid) == data


@given(st.text(alphabet="0123456789abcdef", min_size=40, max_size=40), st.integers(0, 2**40))
def test_pointer_round_trips(blob: str, size: int) -> None:
    assert parse_pointer(pointer(blob, size)) == (blob, size)


@pytest.mark.parametrize(
    ("size", "cap", "is_pointer"),
    [(10, None, False), (10, 10, False), (11, 10, True), (0, 0, False), (1, 0, True)],
)
def test_only_files_above_the_cap_become_pointers(size: int, cap: int | None,
                                                  is_pointer: bool) -> None:
    blob = "a" * 40
    assert (recorded_oid(blob, size, cap) != blob) is is_pointer


@pytest.mark.parametrize("text", [b"", b"freshline-pointer 1\nblob x\nsize 1\n", b"hello\n",
                                  pointer("a" * 40, 5) + b"extra"])
def test_other_blobs_are_not_pointers(text: bytes) -> None:
    assert parse_pointer(text) is None


def test_a_hook_prompts_checkpoint_writes_the_project_once_then_only_what_changed(
    ws: Workspace
) -> None:
    """The first prompt's checkpoint writes the project as one pack (its root event with
    it) and its own commit loose; the next writes loose only what changed: the edited
    file's blob, the three trees on its way, the commit."""
    ws.configure({"notes": {"include": ["notes"]}})
    fill(ws, 500)
    assert "<project_context " in hook_answer(ws.root / "notes")
    private = ws.root / PRIVATE
    assert (pack_count(private), loose_objects(private)) == (1, 1)
    ws.write("notes/f0/n0.md", "edited\n")
    hook_answer(ws.root / "notes")
    assert (pack_count(private), loose_objects(private)) == (1, 1 + 5)
    manager = SessionManager(ws.config())
    try:
        [s] = manager.sessions()
        assert s.channel == "hook" and manager.conversations.exists(s.id) and s.turns == 2
    finally:
        manager.close()


def test_packs_from_many_turns_are_folded_together(ws: Workspace) -> None:
    ws.configure({"notes": {"include": ["notes"]}})
    fill(ws, 20)
    manager, sid = chat(ws)
    private = ws.root / PRIVATE
    try:
        for turn in range(12):  # two packs a turn: its tree, then its commits
            ws.write("notes/f0/n0.md", f"turn {turn}\n")
            send(manager, sid, f"turn {turn}", get_backend("echo"))
            assert pack_count(private) <= MAX_PACKS + 1
        head = manager.conversations.head(sid)
    finally:
        manager.close()
    assert loose_objects(private) == 0
    assert git(private, "cat-file", "blob", f"{head}:notes/f0/n0.md") == "turn 11"
    assert "missing" not in git(private, "fsck", "--connectivity-only")
