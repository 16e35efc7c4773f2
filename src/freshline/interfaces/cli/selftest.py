"""`freshline selftest`: the tracker's differential proof, run on the user's file system."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption, console
from freshline.interfaces.selftest import (
    SCENARIOS,
    Status,
    outcome_dict,
    render,
    run_selftest,
)
from freshline.paths import shown


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
        console.print(f"{len(chosen)} scenarios × 3 modes in {shown(str(where))} …", markup=False)
    outcomes = run_selftest(where, chosen)
    agree = all(o.status in (Status.OK, Status.SKIPPED) for o in outcomes)
    if as_json:
        data = {"directory": str(where), "agree": agree,
                "outcomes": [outcome_dict(o) for o in outcomes]}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        for line in render(outcomes):
            console.print(line, markup=False)
        bad = sum(o.status not in (Status.OK, Status.SKIPPED) for o in outcomes)
        console.print("all agree with the truth" if agree else f"{bad} cells disagree")
    if not agree:
        raise typer.Exit(1)
