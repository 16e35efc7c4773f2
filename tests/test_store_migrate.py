"""`freshline store migrate --to …`: a real workspace's store copied to PostgreSQL and
back to SQLite, every table and count, ids continuing; bad targets refused with nothing
written."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from typer.testing import CliRunner

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.interfaces.cli import app
from freshline.session import SessionManager, users
from freshline.store import Store, WithheldRow, open_database
from freshline.store.location import ENV_VAR
from freshline.store.records import ChangeGroup
from freshline.tracker import Tracker
from tests.churn import notes_workspace
from tests.pgserver import PgServer


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["--workspace", str(root), *args], env=env)
    return done.exit_code, done.stdout, done.stderr


def counts(store: Store) -> dict[str, int]:
    db = store.db
    return {t: db.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in db.tables()}


def busy_workspace(tmp_path: Path) -> Path:
    """A workspace whose store has rows in every table: epochs, a log and the counts of a
    compacted part, sessions with cursors, ledger rows, deliveries, hints, meta, users with
    grants and sessions they own, a file secrets were withheld from."""
    root = notes_workspace(tmp_path)
    (root / "notes/a.md").write_text("a\n")
    manager = SessionManager(load_config(root))
    try:
        s = manager.new("p").id
        send(manager, s, "first", get_backend("echo"))
        (root / "notes/b.md").write_text("b\n")
        send(manager, s, "second", get_backend("echo"))
        store = manager.store
        from freshline.context import Channel
        from freshline.session.engine import Deliveries

        mcp = manager.new("p", channel=Channel.MCP).id
        Deliveries(manager).issue(mcp, Channel.MCP)
        manager.record_read(s, "notes/a.md", "0" * 40)
        store.hints_add(["notes/b.md"])
        with store.write():
            store.groups_append("p", [ChangeGroup(1, 1, "notes", {"created": 3})])
        users.add(store, manager.config, "alice", ["p"])
        store.session_own(mcp, "alice")
        store.failure_try("192.0.2.1", time.time(), 0.0, 10)
        store.withheld_note([WithheldRow("notes/a.md", "0" * 40, ("jwt",))])
    finally:
        manager.close()
    return root


def test_a_store_goes_to_postgresql_and_back_with_every_row(
    tmp_path: Path, pg_server: PgServer
) -> None:
    root = busy_workspace(tmp_path)
    before = counts(Store(root / ".freshline"))
    assert all(before.values()), before  # every table has something to copy
    url = pg_server.new_schema()
    code, out, err = run(root, "store", "migrate", "--to", url, "--json")
    assert code == 0, err
    assert json.loads(out)["tables"] == before
    pg = Store(root / ".freshline", url)
    assert counts(pg) == before
    tracker = Tracker(load_config(root), pg)  # the copy is a working store
    assert tracker.epoch("p") == Tracker(load_config(root)).epoch("p") > 0
    (root / "notes/c.md").write_text("c\n")
    tracker.scan()
    ids = [r[0] for r in pg.db.conn.execute("SELECT id FROM changes ORDER BY id")]
    assert ids == sorted(set(ids))  # new ids follow the copied ones
    back = tmp_path / "back.db"
    code, out, err = run(root, "store", "migrate", "--to", f"sqlite:{back}",
                         env={ENV_VAR: url})
    assert code == 0, err
    assert "counts verified" in out
    assert counts(Store(tmp_path, f"sqlite:{back}")) == counts(pg)


def test_a_target_with_rows_or_a_bad_url_is_refused(tmp_path: Path, pg_server: PgServer) -> None:
    root = busy_workspace(tmp_path)
    url = pg_server.new_schema()
    Store(root, url).meta_set("someone", "else")
    code, _out, err = run(root, "store", "migrate", "--to", url)
    assert code == 2 and "is not empty (rows in meta)" in err
    assert counts(Store(root, url))["meta"] == 1
    code, _out, err = run(root, "store", "migrate", "--to", "mysql://me:pw@h/db")
    assert code == 2 and "pw" not in err and "neither sqlite:PATH" in err
    code, _out, err = run(root, "store", "migrate", "--to", "sqlite:.freshline/freshline.db")
    assert code == 2 and "the store this workspace uses" in err
    assert open_database(root / ".freshline", None).tables()


def test_status_says_where_the_store_is_without_the_password(
    tmp_path: Path, pg_server: PgServer
) -> None:
    root = notes_workspace(tmp_path)
    url = pg_server.new_schema().replace("freshline@", "freshline:s3cret@")
    code, out, err = run(root, "status", env={ENV_VAR: url})
    assert code == 0, err
    assert "store: postgresql://freshline:***@/freshline?host=" in out and "s3cret" not in out
    code, out, _ = run(root, "status", "--json")
    assert json.loads(out)["store"] == str(root / ".freshline" / "freshline.db")


def test_seen_store_migrate_table_names_overflowed_their_column(tmp_path: Path) -> None:
    """Seen: `session_owners` and longer table names pushed their row counts out of line."""
    root = busy_workspace(tmp_path)
    code, out, err = run(root, "store", "migrate", "--to", f"sqlite:{tmp_path / 'copy.db'}")
    assert code == 0, err
    rows = [line for line in out.splitlines() if re.search(r"\d+ rows?$", line)]
    assert len(rows) == len(counts(Store(root / ".freshline")))
    starts = {len(line) - len(re.search(r"\d+ rows?$", line).group(0)) for line in rows}
    names = max(len(line.split()[0]) for line in rows)
    assert len(starts) == 1 and starts.pop() >= names + 2, out
