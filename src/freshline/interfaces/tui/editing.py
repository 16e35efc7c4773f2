"""The chat input's helpers, without textual: the history of sent lines and Tab completion
of slash commands and workspace paths (pure: the directory listing is given)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


class History:
    """What was entered before, walked with Up and Down like a shell's history.

    Walking back from a draft keeps it: walking forward past the newest entry returns it.
    """

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.entries: list[str] = []
        for entry in entries:
            self.add(entry)
        self._at = len(self.entries)  # len(entries): at the draft
        self._draft = ""

    def add(self, entry: str) -> None:
        """Remember an entry (not an empty one, nor the same as the last) and go back to
        the draft."""
        if entry.strip() and (not self.entries or self.entries[-1] != entry):
            self.entries.append(entry)
        self._at = len(self.entries)
        self._draft = ""

    def back(self, current: str) -> str | None:
        """The entry before the one shown (None at the oldest); `current` is kept as the
        draft when leaving it."""
        if self._at == 0:
            return None
        if self._at == len(self.entries):
            self._draft = current
        self._at -= 1
        return self.entries[self._at]

    def forward(self) -> str | None:
        """The entry after the one shown, the draft past the newest, None at the draft."""
        if self._at >= len(self.entries):
            return None
        self._at += 1
        return self._draft if self._at == len(self.entries) else self.entries[self._at]


@dataclass(frozen=True)
class Completion:
    """What Tab does: replace the word being typed by `text`; `options` when several fit."""

    text: str
    options: tuple[str, ...] = ()


def common_prefix(names: Sequence[str]) -> str:
    """The longest prefix every name shares."""
    return os.path.commonprefix(list(names)) if names else ""


def complete_command(word: str, commands: Iterable[str]) -> Completion | None:
    """Complete `/par` to a command; None when nothing starts that way."""
    matches = sorted(f"/{c}" for c in commands if f"/{c}".startswith(word.lower()))
    if not matches:
        return None
    if len(matches) == 1:
        return Completion(matches[0] + " ")
    return Completion(common_prefix(matches), tuple(matches))


Lister = Callable[[str], list[tuple[str, bool]]]
"""Lists a workspace folder (`""`: the root): each entry's name and whether it is a folder."""


def complete_path(word: str, listing: Lister) -> Completion | None:
    """Complete a workspace-relative path: the folder part is listed, the rest matched.
    A single folder gets its `/`; None when nothing matches (or the folder is unreadable)."""
    folder, _, start = word.rpartition("/")
    try:
        entries = listing(folder)
    except OSError:
        return None
    prefix = f"{folder}/" if folder else ""
    matches = sorted((prefix + name + ("/" if is_dir else ""))
                     for name, is_dir in entries if name.startswith(start))
    if not matches:
        return None
    if len(matches) == 1:
        return Completion(matches[0])
    return Completion(common_prefix(matches), tuple(matches))


def last_word(text: str) -> str:
    """The word the cursor is at the end of (words are split by whitespace)."""
    return text.split()[-1] if text and not text[-1].isspace() else ""
