"""The PostgreSQL backend's own promises (a real server): every migration from the one
before on both backends, a newer schema refused, credentials never printed, the write
lock keyed by workspace."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from freshline.config import init_workspace, load_config
from freshline.errors import ConfigError, StoreError, UsageError
from freshline.store import Store, open_database, postgres, sqlite
from freshline.store.location import ENV_VAR, Backend, masked, parse
from freshline.store.postgres import BOOKKEEPING
from freshline.store.schema import MIGRATIONS
from tests.conftest import StoreBackend
from tests.pgserver import PgServer

CHANNELS = "sessions: the channel that opened them, last activity, a title"


@pytest.mark.parametrize("done", range(1, len(MIGRATIONS)))
def test_each_migration_runs_on_a_store_at_the_one_before(
    backend: StoreBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, done: int
) -> None:
    with monkeypatch.context() as older:  # a freshline that knew `done` migrations
        older.setattr(sqlite, "MIGRATIONS", MIGRATIONS[:done])
        older.setattr(postgres, "MIGRATIONS", MIGRATIONS[:done])
        old = backend.store(tmp_path)
        old.meta_set("kept", "yes")
        assert old.db.schema_version() == done
        if "sessions" in old.db.tables():  # a session as the first sessions table held it
            old.db.conn.execute(
                "INSERT INTO sessions (id, project, state, mode, created_at, resumed_at,"
                " manifest_epoch, dirty_key, manifest, needs_manifest, resumed, external_id)"
                " VALUES ('b2', 'p', 'active', 'live', 10.0, 50.0, 0, 'k', '{}', 0, 0, 'mcp:9f')"
            )
        old.close()
    store = backend.store(tmp_path)
    assert store.meta_get("kept") == "yes"
    assert store.db.schema_version() == len(MIGRATIONS)
    assert store.index_count() == 0
    if done >= 2:
        s = store.session_get("b2")
        channels = [n for n, _ in MIGRATIONS].index(CHANNELS)
        assert s.channel == ("mcp" if done <= channels else "send")  # derived, or default
        assert s.last_active == 50.0 and s.turns == 0


def test_a_schema_newer_than_this_freshline_is_refused(pg_server: PgServer) -> None:
    url = pg_server.new_schema()
    Store(Path("/nonexistent"), url).meta_set("k", "v")
    raw = open_database(Path("/nonexistent"), url)
    raw.conn.execute(f"UPDATE {BOOKKEEPING} SET version = ?", (len(MIGRATIONS) + 1,))
    with pytest.raises(StoreError, match="newer than this freshline knows"):
        Store(Path("/nonexistent"), url).meta_get("k")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ann:s3cret@db.example:5432/fl", "postgresql://ann:***@db.example:5432/fl"),
        ("postgres://ann@h/fl?password=s3cret&sslmode=require",
         "postgres://ann@h/fl?password=***&sslmode=require"),
        ("postgresql://ann:p%40ss:w@h/fl", "postgresql://ann:***@h/fl"),
        ("postgresql:///fl?host=/run/pg", "postgresql:///fl?host=/run/pg"),
    ],
)
def test_urls_are_shown_without_their_password(url: str, shown: str) -> None:
    assert masked(url) == shown
    assert parse(url, Path("/")).shown == shown


def test_store_urls_parse_or_say_what_is_wrong(tmp_path: Path) -> None:
    assert parse("sqlite:rel/x.db", tmp_path).target == str(tmp_path / "rel/x.db")
    assert parse("sqlite:///abs/x.db", tmp_path).target == "/abs/x.db"
    assert parse("postgresql://h/db", tmp_path).backend is Backend.POSTGRESQL
    with pytest.raises(UsageError, match=r"'mysql://u:\*\*\*@h/db' is neither"):
        parse("mysql://u:pw@h/db", tmp_path)


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://ann:s3cret@/fl?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreError) as info:
        Store(tmp_path, url).meta_get("k")
    message = str(info.value)
    assert "s3cret" not in message and "\n" not in message
    assert message.startswith("postgresql://ann:***@/fl?host=") and "cannot reach" in message


def test_two_workspaces_on_one_server_are_apart(pg_server: PgServer, tmp_path: Path) -> None:
    first = Store(tmp_path, pg_server.new_schema())
    second = Store(tmp_path, pg_server.new_schema())
    with first.write():  # different schemas: different write locks
        second.meta_set("k", "second")
        first.meta_set("k", "first")
    assert (first.meta_get("k"), second.meta_get("k")) == ("first", "second")


def test_the_store_url_comes_from_the_environment_then_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_workspace(tmp_path)
    config = tmp_path / "freshline.toml"
    config.write_text(config.read_text() + '\nurl = "sqlite:elsewhere.db"\n')
    assert load_config(tmp_path).store_url == "sqlite:elsewhere.db"
    monkeypatch.setenv(ENV_VAR, "postgresql://h/db")
    assert load_config(tmp_path).store_url == "postgresql://h/db"
    config.write_text(config.read_text().replace("sqlite:elsewhere.db", "mysql://u:pw@h/d"))
    with pytest.raises(ConfigError, match=r"store\.url: store url 'mysql://u:\*\*\*@h/d'"):
        load_config(tmp_path)


def test_a_hint_is_stored_while_a_flush_holds_the_write_lock(
    pg_server: PgServer, tmp_path: Path
) -> None:
    # A watcher answers a flush's cookie once its hints are stored: waiting for the lock
    # behind every flush of every server made each cookie wait for them (issue 30).
    url = pg_server.new_schema()
    flushing, watching = Store(tmp_path, url), Store(tmp_path, url)
    flushing.hints_add(["a.md"])
    with flushing.write():
        read = flushing.hints_pending()
        stored = threading.Thread(target=watching.hints_add, args=(["b.md"],))
        stored.start()
        stored.join(10)
        assert not stored.is_alive(), "the hint waited for the write lock"
        flushing.hints_drop(read.rows)  # the flush covered what it read, and only that
    assert read.paths == ["a.md"] and watching.hints_peek() == ["b.md"]
