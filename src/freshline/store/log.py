"""Per-project state (epoch, compaction, signature) and the change log."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from freshline.store.db import Database, decode_path, encode_path, upsert
from freshline.store.records import Change, ChangeKind, LoggedChange


@dataclass(frozen=True)
class ProjectState:
    """What the store remembers of a project between flushes."""

    name: str
    epoch: int
    compacted_through: int
    signature: str
    patterns: dict[str, Any]  # the normalized include/exclude/mode the signature was made of


_PUT = upsert("projects", ["name", "epoch", "compacted_through", "signature", "patterns"],
              ["name"])


class LogTable:
    """Reads and writes of the `projects` and `changes` tables."""

    db: Database

    def project_states(self) -> dict[str, ProjectState]:
        """Every project the store has seen, by name (inside a write, their rows locked
        until it ends: epochs only ever grow, one flush after another)."""
        rows = self.db.conn.execute(
            "SELECT name, epoch, compacted_through, signature, patterns FROM projects"
            + self.db.for_update
        )
        return {r[0]: ProjectState(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows}

    def project_state(self, name: str) -> ProjectState | None:
        """One project's state, if the store has seen it."""
        return self.project_states().get(name)

    def project_put(self, state: ProjectState) -> None:
        """Insert or replace a project's state (call inside `write()`)."""
        self.db.conn.execute(
            _PUT,
            (
                state.name,
                state.epoch,
                state.compacted_through,
                state.signature,
                json.dumps(state.patterns, sort_keys=True),
            ),
        )

    def log_append(self, project: str, epoch: int, changes: Iterable[Change]) -> None:
        """Append changes under one epoch (call inside `write()`)."""
        self.db.conn.executemany(
            "INSERT INTO changes (project, epoch, kind, path, old_path, detail)"
            " VALUES (?,?,?,?,?,?)",
            [
                (
                    project,
                    epoch,
                    c.kind.value,
                    encode_path(c.path),
                    encode_path(c.old_path) if c.old_path is not None else None,
                    json.dumps(c.detail, sort_keys=True) if c.detail is not None else None,
                )
                for c in changes
            ],
        )

    def log_read(self, project: str, since: int) -> list[LoggedChange]:
        """The changes logged after epoch `since`, oldest first."""
        rows = self.db.conn.execute(
            "SELECT epoch, kind, path, old_path, detail FROM changes"
            " WHERE project = ? AND epoch > ? ORDER BY id",
            (project, since),
        )
        return [
            LoggedChange(
                epoch,
                Change(
                    ChangeKind(kind),
                    decode_path(path),
                    decode_path(old) if old is not None else None,
                    json.loads(detail) if detail is not None else None,
                ),
            )
            for epoch, kind, path, old, detail in rows
        ]

    def log_compact(self, project: str, cap: int) -> int | None:
        """Drop the oldest whole epochs until at most `cap` rows remain, but never the newest
        (one flush larger than the cap is kept whole: its readers get the list, not a
        marker); the last epoch dropped, or None."""
        conn = self.db.conn
        total, oldest, newest = conn.execute(
            "SELECT count(*), min(epoch), max(epoch) FROM changes WHERE project = ?", (project,)
        ).fetchone()
        excess = total - cap
        if excess <= 0:
            return None
        # Drop whole epochs only, so a reader never sees half of one.
        row = conn.execute(
            "SELECT epoch FROM changes WHERE project = ? ORDER BY id LIMIT 1 OFFSET ?",
            (project, excess - 1),
        ).fetchone()
        through = min(int(row[0]), int(newest) - 1)
        if through < int(oldest):
            return None  # only the newest epoch is left: nothing to drop
        conn.execute("DELETE FROM changes WHERE project = ? AND epoch <= ?", (project, through))
        return through
