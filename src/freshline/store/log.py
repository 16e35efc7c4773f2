"""Per-project state (epoch, compaction, signature), the change log, and the counts of
what compaction dropped (`change_groups`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from freshline.store.db import Database, decode_path, encode_path, upsert
from freshline.store.records import Change, ChangeGroup, ChangeKind, LoggedChange


@dataclass(frozen=True)
class ProjectState:
    """What the store remembers of a project between flushes."""

    name: str
    epoch: int
    compacted_through: int  # the log's rows up to this epoch are gone (counted in groups)
    signature: str
    patterns: dict[str, Any]  # the normalized include/exclude/mode the signature was made of
    forgotten_through: int = 0  # up to this epoch not even the groups reach back


_PUT = upsert("projects", ["name", "epoch", "compacted_through", "signature", "patterns",
                           "forgotten_through"], ["name"])
_CHANGE = "epoch, kind, path, old_path, detail, content_before"


def _change_row(epoch: int, c: Change) -> tuple[Any, ...]:
    return (
        epoch,
        c.kind.value,
        encode_path(c.path),
        encode_path(c.old_path) if c.old_path is not None else None,
        json.dumps(c.detail, sort_keys=True) if c.detail is not None else None,
        c.before,
    )


def _logged(row: tuple[Any, ...]) -> LoggedChange:
    epoch, kind, path, old, detail, before = row
    return LoggedChange(epoch, Change(
        ChangeKind(kind),
        decode_path(path),
        decode_path(old) if old is not None else None,
        json.loads(detail) if detail is not None else None,
        before,
    ))


class LogTable:
    """Reads and writes of the `projects`, `changes` and `change_groups` tables."""

    db: Database

    def project_states(self) -> dict[str, ProjectState]:
        """Every project the store has seen, by name (inside a write, their rows locked
        until it ends: epochs only ever grow, one flush after another)."""
        rows = self.db.conn.execute(
            "SELECT name, epoch, compacted_through, signature, patterns, forgotten_through"
            " FROM projects" + self.db.for_update
        )
        return {r[0]: ProjectState(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5])
                for r in rows}

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
                state.forgotten_through,
            ),
        )

    def log_append(self, project: str, epoch: int, changes: Iterable[Change]) -> None:
        """Append changes under one epoch (call inside `write()`, the project's state
        stored first)."""
        rows = [(project, *_change_row(epoch, c)) for c in changes]
        conn = self.db.conn
        conn.executemany(f"INSERT INTO changes (project, {_CHANGE}) VALUES (?,?,?,?,?,?,?)", rows)
        conn.execute("UPDATE projects SET log_rows = log_rows + ? WHERE name = ?",
                     (len(rows), project))

    def log_read(self, project: str, since: int) -> list[LoggedChange]:
        """The changes logged after epoch `since`, oldest first."""
        rows = self.db.conn.execute(
            f"SELECT {_CHANGE} FROM changes WHERE project = ? AND epoch > ? ORDER BY epoch, id",
            (project, since),
        )
        return [_logged(row) for row in rows]

    def log_with_state(
        self, project: str, since: int
    ) -> tuple[ProjectState | None, list[LoggedChange]]:
        """The project's state and the changes logged after epoch `since`, oldest first,
        in one statement: the rows are those of that state (no compaction between them),
        without the snapshot two reads would need."""
        rows = self.db.conn.execute(
            "SELECT p.name, p.epoch, p.compacted_through, p.signature, p.patterns,"
            f" p.forgotten_through, {', '.join('c.' + c for c in _CHANGE.split(', '))}"
            " FROM projects p LEFT JOIN changes c ON c.project = p.name AND c.epoch > ?"
            " WHERE p.name = ? ORDER BY c.epoch, c.id",
            (since, project),
        ).fetchall()
        if not rows:
            return None, []
        first = rows[0]
        state = ProjectState(first[0], first[1], first[2], first[3], json.loads(first[4]),
                             first[5])
        return state, [_logged(row[6:]) for row in rows if row[6] is not None]

    def log_drop(self, project: str, cap: int, keep: int) -> list[LoggedChange]:
        """Drop the oldest whole epochs until at most `cap` rows remain, but never epoch
        `keep` or a later one (one flush larger than the cap is kept whole: its readers
        get the list); the rows dropped, oldest first (call inside `write()`).

        The project's row count is kept beside it, so a flush under the cap costs one
        lookup however long the log is."""
        conn = self.db.conn
        row = conn.execute("SELECT log_rows FROM projects WHERE name = ?", (project,)).fetchone()
        excess = (int(row[0]) if row else 0) - cap
        if excess <= 0:
            return []
        # Epochs only grow within a project, so the index's order is the log's order.
        row = conn.execute(
            "SELECT epoch FROM changes WHERE project = ? ORDER BY epoch, id LIMIT 1 OFFSET ?",
            (project, excess - 1),
        ).fetchone()
        through = min(int(row[0]), keep - 1)
        dropped = [_logged(r) for r in conn.execute(
            f"SELECT {_CHANGE} FROM changes WHERE project = ? AND epoch <= ? ORDER BY epoch, id",
            (project, through),
        )]
        if dropped:
            conn.execute("DELETE FROM changes WHERE project = ? AND epoch <= ?",
                         (project, through))
            conn.execute("UPDATE projects SET log_rows = log_rows - ? WHERE name = ?",
                         (len(dropped), project))
        return dropped

    def groups_append(self, project: str, groups: Iterable[ChangeGroup]) -> None:
        """Keep the counts of dropped changes (call inside `write()`)."""
        self.db.conn.executemany(
            "INSERT INTO change_groups (project, first_epoch, last_epoch, folder, counts, entry)"
            " VALUES (?,?,?,?,?,?)",
            [(project, g.first_epoch, g.last_epoch, encode_path(g.folder),
              json.dumps(g.counts, sort_keys=True), _entry_json(g.entry)) for g in groups],
        )

    def groups_read(self, project: str, since: int) -> list[ChangeGroup]:
        """The counts of dropped changes whose span reaches past epoch `since`, oldest
        first."""
        rows = self.db.conn.execute(
            "SELECT first_epoch, last_epoch, folder, counts, entry FROM change_groups"
            " WHERE project = ? AND last_epoch > ? ORDER BY last_epoch, id",
            (project, since),
        )
        return [ChangeGroup(first, last, decode_path(folder), json.loads(counts),
                            _entry_of(entry)) for first, last, folder, counts, entry in rows]

    def groups_trim(self, project: str, most: int) -> int | None:
        """Drop the oldest spans of counts until at most `most` groups remain (a span's
        groups go together); the last epoch they covered, or None (inside `write()`)."""
        conn = self.db.conn
        row = conn.execute(
            "SELECT last_epoch FROM change_groups WHERE project = ?"
            " ORDER BY last_epoch DESC LIMIT 1 OFFSET ?",
            (project, most),
        ).fetchone()
        if row is None:
            return None
        conn.execute("DELETE FROM change_groups WHERE project = ? AND last_epoch <= ?",
                     (project, row[0]))
        return int(row[0])


def _entry_json(entry: Change | None) -> str | None:
    if entry is None:
        return None
    return json.dumps({"kind": entry.kind.value, "detail": entry.detail}, sort_keys=True)


def _entry_of(text: str | None) -> Change | None:
    if text is None:
        return None
    data = json.loads(text)
    return Change(ChangeKind(data["kind"]), "", detail=data["detail"])
