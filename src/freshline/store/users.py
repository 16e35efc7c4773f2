"""Users of `freshline serve`, the projects granted to each, and who owns which session.

A user is a name, the SHA-256 of their bearer token (the token itself is never stored;
"" for a user who signs in only through OAuth) and the subject (`sub`) of the OAuth access
tokens that sign them in, if one was given (unique). Grants are (user, project) pairs; a
session opened over HTTP has an owner. Only portable SQL here: the PostgreSQL store runs
the same statements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from freshline.errors import NotFoundError, UsageError
from freshline.store.db import Database


@dataclass(frozen=True)
class UserRecord:
    """A user as stored."""

    name: str
    token_hash: str  # hex SHA-256 of the bearer token
    created_at: float
    projects: tuple[str, ...] = field(default=())  # granted, sorted
    subject: str | None = None  # the OAuth `sub` mapped to this user, if one was given


class UserTable:
    """Reads and writes of `users`, `grants` and `session_owners`."""

    db: Database

    def user_add(self, name: str, token_hash: str, created_at: float,
                 projects: Iterable[str], subject: str | None = None) -> None:
        """Create a user with grants (UsageError when the name or the subject is taken)."""
        with self.db.write() as conn:
            if conn.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise UsageError(f"user '{name}' exists already (`freshline user rm` first)")
            if subject is not None:
                row = conn.execute("SELECT name FROM users WHERE subject = ?",
                                   (subject,)).fetchone()
                if row:
                    raise UsageError(f"subject '{subject}' is user '{row[0]}' already")
            conn.execute(
                "INSERT INTO users (name, token_hash, created_at, subject) VALUES (?, ?, ?, ?)",
                (name, token_hash, created_at, subject))
            conn.executemany("INSERT INTO grants (username, project) VALUES (?, ?)",
                             [(name, p) for p in sorted(set(projects))])

    def user_list(self) -> list[UserRecord]:
        """Every user with their grants, by name."""
        return self._users("", ())

    def user_of_subject(self, subject: str) -> UserRecord | None:
        """The user an OAuth subject signs in as: the one mapped to it, else the one named
        like it that has no subject of their own."""
        found = self._users(" WHERE u.subject = ? OR (u.name = ? AND u.subject IS NULL)",
                            (subject, subject))
        mapped = [u for u in found if u.subject == subject]
        named = [u for u in found if u.name == subject and u.subject is None]
        return next(iter(mapped or named), None)

    def _users(self, where: str, args: tuple[str, ...]) -> list[UserRecord]:
        """The users `where` selects (of `users u`), with their grants, by name: one
        statement, so a grant revoked meanwhile is either in or out, never half."""
        rows = self.db.conn.execute(
            "SELECT u.name, u.token_hash, u.created_at, u.subject, g.project FROM users u"
            f" LEFT JOIN grants g ON g.username = u.name{where} ORDER BY u.name, g.project",
            args)
        found: dict[str, UserRecord] = {}
        for name, hashed, created, subject, project in rows:
            user = found.get(name) or UserRecord(name, hashed, created, (), subject)
            found[name] = replace(user, projects=(*user.projects, project)) if project else user
        return list(found.values())

    def user_get(self, name: str) -> UserRecord:
        """One user (NotFoundError when unknown)."""
        for user in self.user_list():
            if user.name == name:
                return user
        raise NotFoundError(f"unknown user '{name}' (see `freshline user list`)")

    def user_grant(self, name: str, project: str, granted: bool) -> None:
        """Grant (or, `granted=False`, revoke) a project to a user."""
        self.user_get(name)
        with self.db.write() as conn:
            conn.execute("DELETE FROM grants WHERE username = ? AND project = ?",
                         (name, project))
            if granted:
                conn.execute("INSERT INTO grants (username, project) VALUES (?, ?)",
                             (name, project))

    def user_remove(self, name: str) -> None:
        """Forget a user and their grants (their sessions stay, owned by nobody who can
        reach them)."""
        self.user_get(name)
        with self.db.write() as conn:
            conn.execute("DELETE FROM grants WHERE username = ?", (name,))
            conn.execute("DELETE FROM users WHERE name = ?", (name,))

    def session_own(self, session: str, owner: str) -> None:
        """Record that `owner` opened `session`."""
        self.db.execute_write(
            "INSERT INTO session_owners (session, owner) VALUES (?, ?)", (session, owner))

    def session_owner(self, session: str) -> str | None:
        """Who opened `session` over HTTP (None: nobody did)."""
        row = self.db.conn.execute(
            "SELECT owner FROM session_owners WHERE session = ?", (session,)).fetchone()
        return str(row[0]) if row else None
