"""Users of a shared workspace (`freshline serve`): bearer tokens, OAuth subjects and
project grants.

A user signs in with a token freshline made (for scripts), or with an access token of the
team's authorization server whose `sub` names them (`subject_user`). A token is 32 random
bytes (URL-safe base64, prefixed `fl_` so it is recognizable in a leaked log); the store
keeps only its SHA-256. `authenticate` hashes what a request presents and compares it
with every user's hash in constant time (`hmac.compare_digest`, no early exit), so
neither the answer nor its timing says which user or how close.

A `Viewer` is who asks: the workspace's own user (stdio MCP, the CLI) sees every project;
a user of the HTTP server sees the projects granted to them, read from the store on each
request so a revocation holds from the next one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass

from freshline.config import Config
from freshline.errors import UsageError
from freshline.store import SessionRecord, Store, UserRecord

TOKEN_PREFIX = "fl_"
TOKEN_BYTES = 32
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@dataclass(frozen=True)
class Viewer:
    """Who is asking. `user` None is the workspace's own user, who sees everything."""

    user: str | None = None
    projects: frozenset[str] = frozenset()

    def sees(self, project: str) -> bool:
        """Whether this viewer may know that `project` exists."""
        return self.user is None or project in self.projects


OWNER = Viewer()  # the workspace's own user


def token_hash(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def check_name(name: str) -> str:
    """`name` if it is a usable user name, else UsageError."""
    if not _NAME.fullmatch(name):
        raise UsageError(f"invalid user name {name!r}: letters, digits, . _ @ - (64 at most)")
    return name


def _check_projects(config: Config, projects: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(projects))
    for project in wanted:
        config.project(project)  # NotFoundError names an unknown one
    return wanted


def add(
    store: Store, config: Config, name: str, projects: Iterable[str] = (),
    subject: str | None = None,
) -> str | None:
    """Create a user granted `projects`; returns their token (shown once, never stored).
    A user given the `subject` of their OAuth access tokens signs in only through the
    authorization server: no token is made (None)."""
    wanted = _check_projects(config, projects)
    check_name(name)
    if subject is not None and not subject.strip():
        raise UsageError("empty subject: give the `sub` of the user's access tokens")
    token = None if subject is not None else TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    stored = token_hash(token) if token is not None else ""
    store.user_add(name, stored, time.time(), wanted, subject)
    return token


def grant(store: Store, config: Config, name: str, project: str) -> None:
    """Grant `project` to a user."""
    _check_projects(config, [project])
    store.user_grant(name, project, granted=True)


def revoke(store: Store, name: str, project: str) -> None:
    """Take `project` away from a user (effective on their next request)."""
    store.user_grant(name, project, granted=False)


def authenticate(store: Store, token: str | None) -> UserRecord | None:
    """The user whose token this is, or None (every stored hash is compared)."""
    if not token:
        return None
    presented = token_hash(token)
    found = None
    for user in store.user_list():
        if hmac.compare_digest(presented, user.token_hash):
            found = user
    return found


def subject_user(store: Store, subject: str) -> UserRecord | None:
    """The user an OAuth access token's `sub` signs in: the one given that subject, else
    the one of that name who was given none."""
    return store.user_of_subject(subject)


def viewer_of(user: UserRecord) -> Viewer:
    """The viewer a user is: their name and grants."""
    return Viewer(user.name, frozenset(user.projects))


def may_use(viewer: Viewer, s: SessionRecord, owner: str | None) -> bool:
    """Whether `viewer` may use session `s`, opened by `owner`: the workspace's own user
    any; a user of the shared server only one they opened, of a project still granted to
    them."""
    if viewer.user is None:
        return True
    return owner == viewer.user and viewer.sees(s.project)


def give(store: Store, session_id: str, viewer: Viewer) -> None:
    """Record that `viewer` opened the session (nothing for the workspace's own user)."""
    if viewer.user is not None:
        store.session_own(session_id, viewer.user)
