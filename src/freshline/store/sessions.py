"""The sessions table: one row per conversation of an agent about one project."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass, field, fields
from enum import StrEnum
from typing import Any

from freshline.errors import NotFoundError, UsageError
from freshline.paths import shown
from freshline.store.db import Database, upsert

# What a session id may be: every session is also a git conversation, so its id must be a
# plain ref component (new ids are 12 hex digits).
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_session_id(session_id: str) -> str:
    """`session_id` if it has a session id's form, else UsageError (checked before any SQL
    or git call sees it)."""
    if not SESSION_ID.fullmatch(session_id) or ".." in session_id:
        why = f"invalid session id '{session_id}': use an id `session list` shows"
        raise UsageError(shown(why))
    return session_id


def unknown_session(session_id: str) -> NotFoundError:
    """The error for a session id nobody (that may ask) opened."""
    return NotFoundError(f"unknown session '{session_id}' (see `freshline session list`)")


# Channels whose agent freshline runs itself, so each turn has an answer to record
# ("pull": a chat or send conversation pulled from another machine).
RECORDING_CHANNELS = frozenset({"chat", "send", "pull"})
# Channels whose agent keeps its own transcript while freshline records each of its prompts
# as a checkpoint: the project's files as the prompt found them (session/checkpoints.py).
CHECKPOINT_CHANNELS = frozenset({"hook", "acp"})
PULLED = "pull"
TURN_KEY = "turn.{session}"  # meta: the turn a checkpoint session's agent is in (TurnState)
CHECKPOINT_KEY = "checkpoint.{session}"  # meta: its last checkpoint while not yet written
TITLE_CHARS = 60  # the longest title kept


def session_title(message: str) -> str | None:
    """A session's title from its first message: the first non-blank line, blanks
    collapsed, cut to TITLE_CHARS with an ellipsis (None for a blank message). A lone
    surrogate (which SQLite cannot store) reads as "?"."""
    line = next((ln for ln in message.splitlines() if ln.strip()), "")
    text = " ".join(line.encode("utf-8", "replace").decode("utf-8").split())
    if not text:
        return None
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"


class SessionState(StrEnum):
    """Where a session is in its life."""

    LANDING = "landing"  # created, manifest built, nothing sent yet
    ACTIVE = "active"  # at least one prompt accepted
    CLOSED = "closed"  # ended; `resume` reopens it


@dataclass
class SessionRecord:
    """A session as stored. `cursor` None means not seeded: announce the backlog."""

    id: str
    project: str
    state: SessionState
    mode: str
    created_at: float
    resumed_at: float | None
    cursor: int | None
    manifest_epoch: int  # the epoch captured when the manifest's materialization began
    dirty_key: str  # `signature#epoch` the manifest was built for
    held_key: str | None  # the dirty key a landing already held for (hold at most once)
    manifest: str  # the manifest's input (JSON), rendered and delivered while needs_manifest
    needs_manifest: bool
    resumed: bool
    pending_docs: list[str] = field(default_factory=list)  # announced as in progress
    announced_failures: dict[str, str] = field(default_factory=dict)  # path -> fingerprint
    external_id: str | None = None  # another agent's session id (hooks)
    target: str | None = None  # the conversation's checkout target (isolated mode)
    live_tree: str | None = None  # the live conversation tree last written for a turn
    live_epoch: int | None = None  # the project epoch `live_tree`'s listing covered (or later)
    turns: int = 0  # turns delivered: each accepted turn that carried something counts one
    channel: str = "send"  # how its agent is reached: chat, send, hook, mcp or acp; pull
    active_at: float | None = None  # when it last prepared a turn (None: never since created)
    title: str | None = None  # its first message, shortened (`session_title`)

    @property
    def records_conversation(self) -> bool:
        """Whether its turns are recorded as a git conversation: only the channels whose
        agent freshline runs itself (hooks, MCP and ACP deliver to an agent it does not)."""
        return self.channel in RECORDING_CHANNELS

    @property
    def checkpoints(self) -> bool:
        """Whether its prompts are recorded as checkpoints (an agent freshline does not run:
        a hook's, the ACP proxy's); its turns are then its prompts, numbered as `log`
        numbers them."""
        return self.channel in CHECKPOINT_CHANNELS

    @property
    def last_active(self) -> float:
        """When it was last used (created, resumed or a turn prepared)."""
        return max(self.created_at, self.resumed_at or 0.0, self.active_at or 0.0)


_NAMES = [f.name for f in fields(SessionRecord)]
# Every table with rows per session, as (table, session column): `session_delete` empties
# them all. A new table keyed by session adds itself here.
SESSION_TABLES: list[tuple[str, str]] = [
    ("sessions", "id"), ("ledger", "session"), ("deliveries", "session"),
    ("session_owners", "session"),
]
_JSON = {"pending_docs", "announced_failures"}
_PUT = upsert("sessions", _NAMES, ["id"])
_META_PUT = upsert("meta", ["key", "value"], ["key"])
_SWAP = (
    f"UPDATE sessions SET {', '.join(f'{n} = ?' for n in _NAMES if n != 'id')}"
    " WHERE id = ? AND COALESCE(cursor, -1) = ? RETURNING id"
)


def _to_row(s: SessionRecord) -> tuple[Any, ...]:
    values = []
    for name, value in zip(_NAMES, astuple(s), strict=True):
        values.append(json.dumps(value, sort_keys=True) if name in _JSON else value)
    return tuple(values)


def _from_row(row: tuple[Any, ...]) -> SessionRecord:
    data = dict(zip(_NAMES, row, strict=True))
    for name in _JSON:
        data[name] = json.loads(data[name])
    data["state"] = SessionState(data["state"])
    data["needs_manifest"] = bool(data["needs_manifest"])
    data["resumed"] = bool(data["resumed"])
    return SessionRecord(**data)


@dataclass
class TurnState:
    """Where a checkpoint session's agent is between a prompt and the end of its answer."""

    turn: int  # the prompt's turn number
    at: float  # when the prompt came
    tools: dict[str, int] = field(default_factory=dict)  # shell tools running → the
    #                                                      project's epoch when each began

    def to_json(self) -> str:
        """The stored form."""
        return json.dumps({"turn": self.turn, "at": self.at, "tools": self.tools},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TurnState | None:
        """The inverse of `to_json` (None for "": no turn open)."""
        if not text:
            return None
        data = json.loads(text)
        return cls(int(data["turn"]), float(data["at"]),
                   {str(k): int(v) for k, v in dict(data.get("tools") or {}).items()})


class SessionTable:
    """Reads and writes of the `sessions` table."""

    db: Database

    def session_get(self, session_id: str) -> SessionRecord:
        """One session (NotFoundError when unknown, UsageError when not an id at all).
        Inside a write its row stays locked until the write ends (`for_update`), so a
        read-then-write of it never crosses a `session_write` of the same session."""
        row = self.db.conn.execute(
            f"SELECT {', '.join(_NAMES)} FROM sessions WHERE id = ?" + self.db.for_update,
            (check_session_id(session_id),),
        ).fetchone()
        if row is None:
            raise unknown_session(session_id)
        return _from_row(row)

    def session_owned(self, session_id: str) -> tuple[SessionRecord, str | None]:
        """One session and who opened it over HTTP (None: nobody did), in one read
        (NotFoundError when unknown, UsageError when not an id at all)."""
        row = self.db.conn.execute(
            f"SELECT {', '.join('s.' + n for n in _NAMES)}, o.owner FROM sessions s"
            " LEFT JOIN session_owners o ON o.session = s.id WHERE s.id = ?",
            (check_session_id(session_id),),
        ).fetchone()
        if row is None:
            raise unknown_session(session_id)
        return _from_row(row[:-1]), row[-1]

    @contextmanager
    def session_write(self, session_id: str) -> Iterator[SessionRecord]:
        """A write transaction over one session and its deliveries that locks the
        session's row first: two of one session take turns, and none waits for a flush
        (PostgreSQL; on SQLite every write waits for any other). It yields the session
        as the lock found it. NotFoundError when there is no such session."""
        with self.db.write_rows():
            yield self.session_get(session_id)

    def session_by_external(self, external_id: str) -> SessionRecord | None:
        """The session mapped to another agent's session id, if any."""
        row = self.db.conn.execute(
            f"SELECT {', '.join(_NAMES)} FROM sessions WHERE external_id = ?", (external_id,)
        ).fetchone()
        return _from_row(row) if row else None

    def session_list(self, project: str | None = None) -> list[SessionRecord]:
        """Every session (of one project), oldest first."""
        sql = f"SELECT {', '.join(_NAMES)} FROM sessions"
        args: tuple[str, ...] = ()
        if project is not None:
            sql, args = sql + " WHERE project = ?", (project,)
        rows = self.db.conn.execute(sql + " ORDER BY created_at, id", args)
        return [_from_row(r) for r in rows]

    def session_put(self, s: SessionRecord) -> None:
        """Insert or replace a session (joins the current transaction if there is one)."""
        check_session_id(s.id)
        self.db.execute_write(_PUT, _to_row(s))

    def session_swap(self, s: SessionRecord, cursor: int | None) -> bool:
        """Replace the session's row only while its cursor is still `cursor` (a
        compare-and-set; call inside `write()`). False when another writer moved it."""
        row = dict(zip(_NAMES, _to_row(s), strict=True))
        values = tuple(v for name, v in row.items() if name != "id")
        expected = -1 if cursor is None else cursor  # cursors are epochs: never negative
        found = self.db.conn.execute(
            _SWAP, (*values, check_session_id(s.id), expected)
        ).fetchone()
        return found is not None

    def session_touch(self, session_id: str, when: float, title: str | None = None) -> None:
        """Record that the session was used at `when`, and its title if it has none yet
        (joins the current transaction if there is one). Outside one it is a statement of
        its own, without the store's write lock: it only ever moves `active_at` forward
        and touches no index, so it need not queue behind flushes (every send makes one)."""
        self.db.conn.execute(
            "UPDATE sessions SET active_at = MAX(COALESCE(active_at, 0), ?),"
            " title = COALESCE(title, ?) WHERE id = ?",
            (when, title, check_session_id(session_id)),
        )

    def session_name(self, external_id: str, title: str) -> None:
        """Title the session bound to another agent's session, unless it has a title (a
        statement of its own, as `session_touch`: it touches no index)."""
        self.db.conn.execute(
            "UPDATE sessions SET title = ? WHERE external_id = ? AND title IS NULL",
            (title, external_id),
        )

    def sessions_idle(self, channels: Iterable[str], before: float) -> list[SessionRecord]:
        """Open sessions of `channels` not used since `before`, oldest first."""
        wanted = sorted(channels)
        marks = ", ".join("?" for _ in wanted)
        rows = self.db.conn.execute(
            f"SELECT {', '.join(_NAMES)} FROM sessions WHERE state != ? AND channel IN ({marks})"
            " AND MAX(created_at, COALESCE(resumed_at, 0), COALESCE(active_at, 0)) < ?"
            " ORDER BY created_at, id",
            (SessionState.CLOSED.value, *wanted, before),
        )
        return [_from_row(r) for r in rows]

    def session_delete(self, session_ids: Iterable[str]) -> None:
        """Forget sessions: their rows in every table keyed by session (SESSION_TABLES),
        their turn state and unwritten checkpoint, in one transaction."""
        ids = [(check_session_id(i),) for i in session_ids]
        with self.db.write() as conn:
            for table, column in SESSION_TABLES:
                conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", ids)
            conn.executemany("DELETE FROM meta WHERE key = ?",
                             [(key.format(session=i),) for (i,) in ids
                              for key in (TURN_KEY, CHECKPOINT_KEY)])

    def turn_state(self, session_id: str) -> TurnState | None:
        """The turn a checkpoint session's agent is in (None: between turns)."""
        row = self.db.conn.execute("SELECT value FROM meta WHERE key = ?",
                                   (TURN_KEY.format(session=session_id),)).fetchone()
        return TurnState.from_json(row[0]) if row else None

    def turn_state_put(self, session_id: str, state: TurnState | None) -> None:
        """Set (None: end) the turn a checkpoint session's agent is in (joins the current
        transaction if there is one)."""
        key = TURN_KEY.format(session=session_id)
        self.db.execute_write(_META_PUT, (key, state.to_json() if state else ""))
