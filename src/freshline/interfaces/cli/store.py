"""`freshline store migrate`: move a workspace's store to PostgreSQL (or back to SQLite)."""

from __future__ import annotations

from pathlib import Path

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption, config, emit, exit_with
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
    (FRESHLINE_STORE_URL, or `[store] url` in freshline.toml). The workspace's watcher is
    stopped first (what it wrote during the copy would stay behind); the next command
    starts one on the store it uses.

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
    stopped = _stop_watcher(cfg.root, as_json)
    copied = copy_store(source, target)
    data = {"from": source.location, "to": target_at.shown, "watcher_stopped": stopped,
            "tables": {c.table: c.rows for c in copied}}

    def human() -> None:
        if stopped is not None:
            say(f"stopped the watcher (pid {stopped}); the next command starts one on the "
                "store it uses")
        for line in columns(("table", "rows"), [(c.table, plural(c.rows, "row"))
                                                for c in copied]):
            say(line)
        say(f"copied {source.location} to {target_at.shown}; counts verified")
        say(f"use it: export FRESHLINE_STORE_URL='{target_at.shown}' "
            "(or [store] url in freshline.toml)")

    emit(data, as_json, human)


def _stop_watcher(root: Path, as_json: bool) -> int | None:
    """Stop the workspace's watcher before the copy; its pid (None: none ran). A watcher
    that will not stop stops the migration, named."""
    from freshline.tracker.autowatch import stop
    from freshline.tracker.watchlock import holder

    pid = holder(root)
    if pid is not None and not stop(root):
        exit_with(f"the watcher of {root} (pid {pid}) did not stop, so nothing was copied; "
                  f"stop it (`kill {pid}`) and migrate again", 1, as_json)
    return pid
