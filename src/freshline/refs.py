"""Git ref names as people write them: one name for one ref everywhere freshline shows it
(blocks, conflict hints, the chat), whichever way it was given (pure)."""

from __future__ import annotations

_PREFIXES = ("refs/heads/", "refs/tags/", "refs/remotes/")
COMMIT_SHOWN = 12  # hex digits of a commit id shown for a commit given as a name


def short_ref(name: str) -> str:
    """`refs/heads/main` → `main`, `refs/remotes/origin/main` → `origin/main`; a full
    commit id shortened; anything else as it is."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name[:COMMIT_SHOWN] if len(name) == 40 else name
