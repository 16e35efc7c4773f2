"""What the command line says when a send, `updates` or `sync` stops on a conflict (exit
3) or needs a sync (exit 4): the error, each conflicted path with its kind, then what did
not happen and the command that resolves it, with the real session and rev."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from freshline.interfaces.cli.common import exit_with
from freshline.interfaces.cli.output import fail

if TYPE_CHECKING:
    from freshline.errors import ConflictStop, SyncRequired

NOT_SENT = "the message was not sent"
NEXT_SEND_STOPS = "the next send will stop"
NOT_MERGED = "nothing was merged"


def stop_lines(session_id: str, stop: ConflictStop | SyncRequired, outcome: str) -> list[str]:
    """The lines after a stop's error: its conflicts by kind, then `outcome` and, for a
    merge that conflicts, the sync that records the conflicts for the agent to resolve.
    (A sync required names its command in the error itself.)"""
    kinds: dict[str, str] = getattr(stop, "kinds", {})
    target: str | None = getattr(stop, "target", None)
    lines = [f"  conflict ({kind}): {path}" for path, kind in sorted(kinds.items())]
    if kinds and target:
        outcome += (f"; resolve with `freshline sync {session_id} {target} --with-conflicts` "
                    "(records the conflicts for the agent to resolve)")
    return [*lines, outcome]


def stopped(
    session_id: str, stop: ConflictStop | SyncRequired, outcome: str, as_json: bool,
    data: dict[str, Any] | None = None,
) -> NoReturn:
    """Report a stop (see the module docstring) and exit with its code; under `--json`,
    `data` with what stopped and the conflicts."""
    from freshline.errors import ConflictStop

    kinds = stop.kinds if isinstance(stop, ConflictStop) else {}
    if as_json:
        exit_with(str(stop), stop.exit_code, True, (data or {}) | {
            "stopped": "conflict" if isinstance(stop, ConflictStop) else "sync_required",
            "message": str(stop),
            "conflicts": [{"path": p, "kind": k} for p, k in sorted(kinds.items())],
        })
    fail(str(stop), stop.exit_code, False)
    sys.stderr.write("".join(f"{line}\n" for line in stop_lines(session_id, stop, outcome)))
    raise typer.Exit(stop.exit_code)
