"""`freshline selftest`: the tracker's differential proof, run on the user's file system."""

from __future__ import annotations

from pathlib import Path

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption
from freshline.interfaces.cli.output import say, write_json
from freshline.interfaces.cli.progress import Activity, activity
from freshline.interfaces.selftest import (
    SCENARIOS,
    Mode,
    Outcome,
    Status,
    outcome_dict,
    render,
    run_selftest,
)
from freshline.interfaces.text import plural
from freshline.paths import shown

# What each mode is doing, for the progress line; the modes run one after another, every
# scenario at once.
OBSERVING = {
    Mode.WATCHER: "observing with a watcher and a hinted flush",
    Mode.FRESH: "observing by a full scan in a fresh process",
    Mode.WARM: "observing by a full scan in a process that scanned before",
}


def selftest(
    directory: Path | None = typer.Argument(
        None, help="A folder on the file system to test (default: the current one)."
    ),
    only: list[str] = typer.Option(
        [], "--only", help="Run only the scenarios whose name contains this text (repeatable)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Check that freshline reports exactly what changed on this file system: every scenario
    (renames, git operations, odd names…) is observed with a watcher, by a fresh scan and by
    a warm one, and compared with the truth. Exit 0 only when all agree.

    Example: freshline selftest ~/notes
    """
    where = (directory or Path.cwd()).expanduser()
    if not where.is_dir():
        raise UsageError(f"{shown(str(where))}: not a directory")
    chosen = [s for s in SCENARIOS if not only or any(o in s.name for o in only)]
    if not chosen:
        raise UsageError(f"no scenario matches {', '.join(only)}")
    if not as_json:
        say(f"{plural(len(chosen), 'scenario')} × {len(Mode)} modes in {shown(str(where))} …")
    with activity(OBSERVING[Mode.WATCHER], as_json) as progress:
        done: list[Outcome] = []

        def observed(outcome: Outcome) -> None:
            done.append(outcome)
            _show(progress, len(done), len(chosen))

        _show(progress, 0, len(chosen))
        outcomes = run_selftest(where, chosen, observed)
    agree = all(o.status in (Status.OK, Status.SKIPPED) for o in outcomes)
    if as_json:
        write_json({"directory": str(where), "agree": agree,
                    "outcomes": [outcome_dict(o) for o in outcomes]})
    else:
        for line in render(outcomes):
            say(line)
        bad = sum(o.status not in (Status.OK, Status.SKIPPED) for o in outcomes)
        say("all agree with the truth" if agree else f"{bad} cells disagree")
    if not agree:
        raise typer.Exit(1)


def _show(progress: Activity, done: int, scenarios: int) -> None:
    """The mode under way and how many of the cells are observed."""
    modes = list(Mode)
    under_way = modes[min(done // max(scenarios, 1), len(modes) - 1)]
    progress.count(OBSERVING[under_way], done, scenarios * len(modes))
