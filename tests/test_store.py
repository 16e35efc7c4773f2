"""The SQLite store: migrations, WAL, waiting writers, paths that are not UTF-8."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.errors import StoreError
from freshline.store import Store
from freshline.store.db import decode_path, encode_path
from freshline.store.files import _tags_json
from freshline.store.schema import MIGRATIONS
from freshline.store.sqlite import DB_NAME


def test_a_new_store_is_migrated_to_the_latest_schema_in_wal_mode(tmp_path: Path) -> None:
    Store(tmp_path).meta_set("k", "v")
    conn = sqlite3.connect(tmp_path / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_run_forward_from_an_older_schema(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(MIGRATIONS[0][1] + "; PRAGMA user_version = 1;")
    conn.execute("INSERT INTO meta (key, value) VALUES ('kept', 'yes')")
    conn.commit()
    conn.close()
    store = Store(tmp_path)
    assert store.meta_get("kept") == "yes"
    assert store.session_list() == []


def test_the_ledger_then_the_deliveries_migrate_a_store_with_sessions(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    for n, (_name, script) in enumerate(MIGRATIONS[:3], start=1):
        conn.executescript(script + f"; PRAGMA user_version = {n};")
    conn.execute(
        "INSERT INTO sessions (id, project, state, mode, created_at, manifest_epoch,"
        " dirty_key, manifest, needs_manifest, resumed) VALUES"
        " ('0123456789ab', 'p', 'active', 'live', 0, 0, 'k', '{}', 0, 0)"
    )
    conn.commit()
    conn.close()
    store = Store(tmp_path)
    s = store.session_get("0123456789ab")
    assert (s.turns, s.channel, s.records_conversation) == (0, "send", True)
    assert store.ledger_of(s.id) == [] and store.deliveries_of(s.id) == []
    assert [name for name, _ in MIGRATIONS[3:7]] == [
        "the read ledger, and the turns each session was delivered",
        "files: the line sketch of text files, the content evidence of a rename that edited",
        "sessions: the channel that opened them, last activity, a title",
        "deliveries by token",
    ]


def test_a_schema_newer_than_this_freshline_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this freshline knows"):
        Store(tmp_path).meta_get("k")


@pytest.mark.parametrize("path", ["plain.md", "caf\udce9.md", "日本/メモ.md", "a b/c"])
def test_paths_round_trip(path: str) -> None:
    assert decode_path(encode_path(path)) == path


@given(st.lists(st.text(max_size=8), min_size=1, max_size=4).map(tuple))
def test_tags_are_stored_as_the_json_encoder_writes_them(tags: tuple[str, ...]) -> None:
    assert _tags_json(tags) == json.dumps(list(tags))
