"""Where a store lives: the `[store] url` of freshline.toml (or FRESHLINE_STORE_URL).

`sqlite:PATH` names a SQLite file (the default is `.freshline/freshline.db`);
`postgresql://user:password@host:port/database?options=-csearch_path%3Dschema` (or
`postgres://`) a PostgreSQL database, one schema per workspace. A URL is shown with its
password masked, everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import unquote

from freshline.errors import UsageError

ENV_VAR = "FRESHLINE_STORE_URL"
MASK = "***"
_PG_SCHEMES = ("postgresql", "postgres")
_SECRET_KEYS = {"password", "sslpassword"}


class Backend(StrEnum):
    """The engines a store runs on."""

    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class Location:
    """A parsed store URL: the backend and what it opens (a file, or the URL itself)."""

    backend: Backend
    target: str  # the SQLite file's path, or the PostgreSQL URL (with its password)

    @property
    def shown(self) -> str:
        """The location as it may be printed: a path, or the URL with no password."""
        if self.backend is Backend.SQLITE:
            return f"sqlite:{self.target}"
        return masked(self.target)


def parse(url: str, base: Path) -> Location:
    """The location `url` names; a relative SQLite path is taken from `base`. UsageError
    (naming the URL masked) when it is neither `sqlite:PATH` nor `postgresql://…`."""
    text = url.strip()
    scheme = text.split(":", 1)[0].lower() if ":" in text else ""
    if scheme in _PG_SCHEMES and text[len(scheme) :].startswith("://"):
        return Location(Backend.POSTGRESQL, text)
    if scheme == Backend.SQLITE.value:
        path = text[len("sqlite:") :]
        if path.startswith("//"):  # sqlite:///abs/path, as other tools write it
            path = path[2:]
        if not path:
            raise UsageError("store url sqlite: names no file (use sqlite:PATH)")
        return Location(Backend.SQLITE, str(base / Path(path).expanduser()))
    raise UsageError(
        f"store url '{masked(text)}' is neither sqlite:PATH nor postgresql://… "
        "(see README, Team setup)"
    )


def masked(url: str) -> str:
    """`url` with any password replaced by ***: in the user part and in the query."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:end], rest[end:]
    user, at, host = netloc.rpartition("@")
    if at and ":" in user:
        netloc = f"{user.split(':', 1)[0]}:{MASK}@{host}"
    path, question, query = tail.partition("?")
    if question:
        pairs = [pair.partition("=") for pair in query.split("&")]
        query = "&".join(
            f"{k}{eq}{MASK if unquote(k).lower() in _SECRET_KEYS else v}" for k, eq, v in pairs
        )
    return f"{scheme}://{netloc}{path}{question}{query}"
