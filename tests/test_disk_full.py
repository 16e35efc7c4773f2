"""A disk filled to 0 bytes free during scan, send and materialize: each command says what
happened in one line and exits 1, nothing partial remains, and once space returns every
change is still delivered. See `small_disk` for the two mechanisms and why both."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import add_project, init_workspace, load_config
from freshline.errors import GitError, StoreError
from freshline.materialize import DocStatus, Materializer, MaterializeSettings
from freshline.session import SessionManager
from freshline.store.sqlite import DB_NAME, SQLiteDatabase
from tests.docgen import entry
from tests.small_disk import FileSizeLimit, SmallDisk, tmpfs

WORDS = " ".join(f"word{i}" for i in range(40))


@pytest.fixture(params=["tmpfs", "fsize"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    if request.param == "tmpfs":
        with tmpfs(tmp_path / "mnt") as mounted:
            yield mounted
    else:
        (tmp_path / "plain").mkdir()
        yield FileSizeLimit(tmp_path / "plain")


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def html(text: str) -> str:
    return f"<html><body><p>{text}</p></body></html>"


def workspace(root: Path) -> Path:
    init_workspace(root)
    add_project(root, "notes", ["notes"])
    (root / "notes").mkdir()
    (root / "notes/a.md").write_text("# A\n")
    (root / "notes/paper.html").write_text(html("the first paper " + WORDS))
    return root


def test_scan_send_and_materialize_on_a_full_disk_lose_nothing(disk: SmallDisk) -> None:
    ws = workspace(disk.root / "ws")
    session = ok(disk.run(ws, "session", "new", "--project", "notes")).strip()
    ok(disk.run(ws, "send", session, "first"))
    (ws / "notes/b.md").write_text("# B\n")
    (ws / "notes/a.md").write_text("# A, edited\n")
    (ws / "notes/new.html").write_text(html("a new paper " + WORDS))

    disk.fill()
    for args in (["scan"], ["send", session, "second"], ["materialize", "notes"]):
        done = disk.run(ws, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
        assert disk.words in done.stderr
    disk.free()

    log = json.loads(ok(disk.run(ws, "log", session, "--json")))
    assert [e["content"] for e in log if e["author"] == "user"] == ["first"]
    sent = json.loads(ok(disk.run(ws, "send", session, "third", "--json")))
    for path in ("notes/b.md", "notes/a.md", "notes/new.html"):
        assert f"{ws}/{path}" in sent["wire_prompt"]
    assert sent["accepted"] and sent["cursor_after"] > sent["cursor_before"]
    converted = json.loads(ok(disk.run(ws, "materialize", "notes", "--json")))
    assert "notes/new.html" in converted["projects"]["notes"]["snapshots"]
    leftovers = [p for p in ws.rglob("*") if p.name.endswith((".tmp", ".freshline-tmp"))]
    assert leftovers == []


def test_a_snapshot_that_did_not_fit_is_tried_again_once_space_returns(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", size=1 << 20) as small:
        root = tmp_path / "ws"
        (root / ".freshline").mkdir(parents=True)
        (small.root / "snapshots").mkdir()
        (root / ".freshline/snapshots").symlink_to(small.root / "snapshots")
        (root / "big.html").write_text(html(WORDS * 400))  # ~160 KiB of text
        doc = entry(root, "big.html")
        settings = MaterializeSettings(workers=1, retry_backoff_s=0)
        with Materializer(root, root / ".freshline", settings) as m:
            small.fill(spare=32 << 10)  # the marker fits, the snapshot does not
            first = m.ensure("p", 1, [doc])
            assert first.failures == {} and not first.complete
            assert first.statuses["big.html"] is DocStatus.PENDING
            marker = m.store.read_marker("big.html")
            assert marker is not None and marker.retry_at is not None
            assert "No space left on device" in marker.reason
            assert not [p for p in (small.root / "snapshots").iterdir() if p.suffix == ".tmp"]
            small.free()
            second = m.ensure("p", 2, [doc])
        assert second.failures == {} and second.statuses["big.html"] is DocStatus.READY


def test_a_send_whose_commit_does_not_fit_records_nothing_and_is_delivered_later(
    tmp_path: Path,
) -> None:
    with tmpfs(tmp_path / "mnt", size=2 << 20) as small:
        root = workspace(tmp_path / "ws")
        (root / ".freshline/conversations.git").symlink_to(small.root)
        manager = SessionManager(load_config(root))
        try:
            s = manager.new("notes")
            send(manager, s.id, "first", get_backend("echo"))
            cursor = manager.get(s.id).cursor
            (root / "notes/big.md").write_bytes(os.urandom(64 << 10))  # a blob to store
            small.fill()
            with pytest.raises(GitError, match="No space left on device") as failed:
                send(manager, s.id, "second", get_backend("echo"))
            assert "\n" not in str(failed.value)
            assert manager.get(s.id).cursor == cursor
            small.free()
            result = send(manager, s.id, "third", get_backend("echo"))
        finally:
            manager.close()
        assert f"{root}/notes/big.md" in result.wire_prompt and result.accepted
        users = [e.content for e in manager.conversations.log(s.id) if e.author.value == "user"]
        assert users == ["first", "third"]


def test_a_write_transaction_that_fills_the_disk_says_so_and_keeps_what_was(
    tmp_path: Path,
) -> None:
    with tmpfs(tmp_path / "mnt", size=1 << 20) as small:
        db = SQLiteDatabase(small.root / DB_NAME)
        with db.write() as tx:
            tx.execute("CREATE TABLE t (x BLOB)")
            tx.execute("INSERT INTO t VALUES (x'00')")
        small.fill()
        # seen: "cannot rollback - no transaction is active", the first error lost
        with pytest.raises(StoreError, match="^no space left on device while writing the store"):
            with db.write() as tx:
                for _ in range(64):
                    tx.execute("INSERT INTO t VALUES (?)", (os.urandom(32 << 10),))
        small.free()
        assert db.conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
        with db.write() as tx:
            tx.execute("INSERT INTO t VALUES (x'01')")
        assert db.conn.execute("SELECT count(*) FROM t").fetchone() == (2,)
        db.close()
