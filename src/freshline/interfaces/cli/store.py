"""`freshline store migrate`: move a workspace's store to PostgreSQL (or back to SQLite)."""

from __future__ import annotations

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption, config, emit
from freshline.interfaces.cli.output import say
from freshline.interfaces.text import columns, plural

store_app = typer.Typer(help="The store: where the index, change logs and sessions live.")


@store_app.command("migrate")
def migrate(
    ctx: typer.Context,
    to: str = typer.Option(
        ..., "--to", metavar="URL", help="postgresql://user@host/db (an empty database or "
        "schema; the password from ~/.pgpass or PGPASSWORD) or sqlite:PATH."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Copy this workspace's store, every table, into another one and verify the counts.

    The workspace keeps using its store until you point it at the new one
    (FRESHLINE_STORE_URL, or `[store] url` in freshline.toml). Stop watchers first: what
    they write during the copy stays behind.

    Example: freshline store migrate --to postgresql://me@db.example/freshline
    """
    from freshline.store import open_database
    from freshline.store.copy import copy_store
    from freshline.store.location import parse

    cfg = config(ctx)
    source = open_database(cfg.data_dir, cfg.store_url, cfg.store.pool_size)
    target_at = parse(to, cfg.root)
    target = open_database(cfg.data_dir, to, cfg.store.pool_size)
    if target.location == source.location:
        raise UsageError(f"--to {target_at.shown}: that is the store this workspace uses")
    copied = copy_store(source, target)
    data = {"from": source.location, "to": target_at.shown,
            "tables": {c.table: c.rows for c in copied}}

    def human() -> None:
        for line in columns(("table", "rows"), [(c.table, plural(c.rows, "row"))
                                                for c in copied]):
            say(line)
        say(f"copied {source.location} to {target_at.shown}; counts verified")
        say(f"use it: export FRESHLINE_STORE_URL='{target_at.shown}' "
            "(or [store] url in freshline.toml)")

    emit(data, as_json, human)
