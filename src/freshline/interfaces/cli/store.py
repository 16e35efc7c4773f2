"""`freshline store migrate`: move a workspace's store to PostgreSQL (or back to SQLite)."""

from __future__ import annotations

from pathlib import Path

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
    (FRESHLINE_STORE_URL, or `[store] url` in freshline.toml). The service stops watching
    the workspace first (what it wrote during the copy would stay behind); the next
    command has it watched again, on the store it uses.

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
    stopped = _stop_watching(cfg.root)
    copied = copy_store(source, target)
    data = {"from": source.location, "to": target_at.shown, "watcher_stopped": stopped,
            "tables": {c.table: c.rows for c in copied}}

    def human() -> None:
        if stopped:
            say("the service stopped watching the workspace; the next command has it "
                "watched again, on the store it uses")
        for line in columns(("table", "rows"), [(c.table, plural(c.rows, "row"))
                                                for c in copied]):
            say(line)
        say(f"copied {source.location} to {target_at.shown}; counts verified")
        say(f"use it: export FRESHLINE_STORE_URL='{target_at.shown}' "
            "(or [store] url in freshline.toml)")

    emit(data, as_json, human)


def _stop_watching(root: Path) -> bool:
    """Have the service stop watching the workspace before the copy; whether it was."""
    from freshline.interfaces import serviceclient

    answer = serviceclient.ask({"op": "unwatch", "root": str(root)}, timeout=30)
    return bool(answer and answer["data"]["stopped"])
