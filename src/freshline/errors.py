"""freshline's exceptions: one base, a shallow tree, an exit code on each.

    FreshlineError                 exit 1, an internal or environment failure
    ├── UsageError                 exit 2, bad usage or input (names what is wrong)
    │   ├── ConfigError            malformed or invalid freshline.toml
    │   ├── WorkspaceError         no workspace found, or a path escaping it
    │   └── NotFoundError          unknown project, session, ref or document
    ├── StoreError                 the store failed (locked, corrupt, unreachable)
    ├── GitError                   a git command failed (names the command)
    │   └── ConversationMoved      another send moved the conversation first: send again
    ├── SessionBusy                another turn holds the session (a send with --no-wait)
    ├── ConflictStop               exit 3, a refresh or sync merge conflicts
    ├── RewindStop                 exit 3, a rewind would overwrite others' edits: not confirmed
    └── SyncRequired               exit 4, the target no longer descends from the last refresh

The library raises these; only the interfaces turn them into a one-line message and an
exit code. `os_failure` words what the machine refused (a full disk, a quota) in one line.
"""

from __future__ import annotations

import errno


class FreshlineError(Exception):
    """Base of every error freshline raises on purpose."""

    exit_code = 1


class UsageError(FreshlineError):
    """Bad usage or input: the message says what is wrong."""

    exit_code = 2


class ConfigError(UsageError):
    """freshline.toml is malformed or invalid."""


class WorkspaceError(UsageError):
    """No workspace found, or a path that escapes it."""


class NotFoundError(UsageError):
    """An unknown project, session, ref or document."""


class StoreError(FreshlineError):
    """The store could not be read or written."""


class GitError(FreshlineError):
    """A git command failed."""


class ConversationMoved(GitError):
    """Another send moved the conversation's ref first; nothing of this turn was recorded."""


class SessionBusy(FreshlineError):
    """Another turn holds the session's lock, and the caller chose not to wait."""


class ConflictStop(FreshlineError):
    """A refresh or sync merge conflicts, or a publication has unresolved conflicts;
    nothing was sent or moved. `kinds` maps each path to its conflict's kind; `target`
    names the rev whose merge conflicts (as people write it), when a merge did."""

    exit_code = 3

    def __init__(
        self, message: str, paths: list[str] | None = None, kinds: dict[str, str] | None = None,
        target: str | None = None,
    ) -> None:
        super().__init__(message)
        self.paths = list(paths or [])
        self.kinds = dict(kinds or {})
        self.target = target


class RewindStop(FreshlineError):
    """A rewind would overwrite paths someone other than the conversation changed after
    the turn, and nobody confirmed it; nothing was moved. `by` maps each path to who."""

    exit_code = 3

    def __init__(self, message: str, by: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.by = dict(by or {})


class SyncRequired(FreshlineError):
    """The checkout target no longer descends from the last refresh: `sync REV` decides."""

    exit_code = 4


# What the machine refused, worded for people; a write is what fills a disk.
_OS_WORDS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for this file system or size limit",
}


def os_failure(exc: OSError, doing: str | None = None) -> FreshlineError:
    """A one-line error for an OSError (exit 1): `no space left on device while writing
    X`. `doing` says what was under way ("writing freshline.toml"); by default the
    error's own file name is used."""
    words = _OS_WORDS.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
    if doing is not None:
        return FreshlineError(f"{words} while {doing}")
    if exc.filename is None:
        return FreshlineError(words)
    if exc.errno in _OS_WORDS:  # only writing fills a disk
        return FreshlineError(f"{words} while writing {exc.filename}")
    return FreshlineError(f"{words}: {exc.filename}")
