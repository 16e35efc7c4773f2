"""The background watcher as commands start it: the one place that starts it for a
command (`tracker.autowatch.ensure`) and tells people, once per workspace, that a process
now runs for it. The typer commands and the fast path both come here."""

from __future__ import annotations

from pathlib import Path

from freshline.interfaces.cli.output import note

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from freshline.config import Config
    from freshline.store import Store


def watch(cfg: Config, store: Store) -> None:
    """Start the workspace's watcher if this command will flush and none runs; the first
    time one starts for the workspace (it has no watcher log yet), say so on stderr."""
    from freshline.config import DATA_DIR
    from freshline.tracker.autowatch import LOG_NAME, ensure

    first = not (Path(cfg.root) / DATA_DIR / LOG_NAME).exists()
    if ensure(cfg, store) and first:
        note(started(cfg.workspace.autowatch_idle))


def started(idle_s: int) -> str:
    """What the first start of a workspace's watcher says."""
    return (f"freshline now watches this workspace in a background process, so later "
            f"commands are fast; it exits after {duration(idle_s)} unused (`freshline watch "
            "--stop` stops it; `autowatch = false` under [workspace] in freshline.toml "
            "turns this off)")


def duration(seconds: int) -> str:
    """`seconds` as people say it: 90 s, 5 min, 1 h, 2 d (rounded down to its unit)."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
