"""What a Claude Code transcript proves about the blocks the hook printed.

Printing is not delivery: harnesses drop hook output (a hook that timed out, an output
shape a version ignores). Claude Code writes what it gives the model to the session's
transcript (`transcript_path`, JSON lines), hook context included as an `attachment` of
type `hook_additional_context`. So the hook looks there, on its next call, for the token
each block carries in its opening tag:

    found      the token is in context the agent was given: the delivery was taken
    missing    not there, though a request went out since it was printed (the hook
               events say so, or an `assistant` entry follows it): it was dropped; or
               the session moved on before any request: it never went out. The next
               delivery tells it again
    in flight  not there yet, and no request went out since: the next delivery builds
               on it rather than repeating it (SessionStart's context reaches the
               transcript only with the first prompt)
    unreadable a request went out but the transcript cannot be read: acknowledged on
               print, and `session show` says so

Only context the model was given counts: a hook error entry also quotes the hook's
stdout, and must not acknowledge anything.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

CONTEXT_ATTACHMENT = "hook_additional_context"


class Verdict(StrEnum):
    """What became of one printed delivery."""

    FOUND = "found"  # in the transcript: the agent was given it
    MISSING = "missing"  # it went out without reaching the agent, or never will: tell again
    IN_FLIGHT = "in flight"  # it may still go out with the next request: wait
    UNREADABLE = "unreadable"  # it went out, but no transcript can tell: taken as printed


class Stage(StrEnum):
    """Where a printed delivery is in Claude Code's flow, from the hook events alone."""

    PENDING = "pending"  # the request that would carry it has not gone out yet
    SENT = "sent"  # a request carrying it went out
    DEAD = "dead"  # the session moved on before any request: it never went out


def stage(printed_at: str, prompted: bool, now: str) -> Stage:
    """The stage of a delivery printed on hook event `printed_at`, seen from the call for
    event `now`. `prompted`: a UserPromptSubmit call came since it was printed.

    UserPromptSubmit's context goes out with its prompt, so any later call comes after
    the request. SessionStart's context waits for the first prompt: it went out once a
    prompt came (or a tool ran); a new SessionStart or SessionEnd before any prompt means
    it never will.
    """
    if printed_at != "SessionStart" or prompted or now == "PostToolUse":
        return Stage.SENT
    if now == "UserPromptSubmit":
        return Stage.PENDING
    return Stage.DEAD


def verdict(found: bool, answered: bool, where: Stage, readable: bool) -> Verdict:
    """The fate of one delivery: its token `found` in given context, an assistant entry
    written after it (`answered`), its stage, the transcript `readable` at all."""
    if found:
        return Verdict.FOUND
    if where is Stage.DEAD:
        return Verdict.MISSING
    if not answered and where is Stage.PENDING:
        return Verdict.IN_FLIGHT
    return Verdict.MISSING if readable else Verdict.UNREADABLE


@dataclass
class Evidence:
    """What one read of a transcript found, from some offset on."""

    readable: bool
    size: int = 0  # the transcript's length in bytes when read
    found: dict[str, int] = field(default_factory=dict)  # token -> offset of its entry
    last_answer: int = -1  # offset of the last assistant entry (-1: none)

    def answered_after(self, offset: int) -> bool:
        """Whether the model answered in an entry written at or after `offset`."""
        return self.last_answer >= offset


def _texts(value: Any) -> Iterable[str]:
    """Every string inside a JSON value (message content is a string or a list of parts)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


def given_context(entry: dict[str, Any]) -> Iterable[str]:
    """The text of a transcript entry that reached the model as context: hook additional
    context, and user messages (where other versions inline it)."""
    kind = entry.get("type")
    attachment = entry.get("attachment")
    if kind == "attachment" and isinstance(attachment, dict):
        if attachment.get("type") == CONTEXT_ATTACHMENT:
            yield from _texts(attachment.get("content"))
    elif kind == "user":
        message = entry.get("message")
        if isinstance(message, dict):
            yield from _texts(message.get("content"))


def scan_lines(
    lines: Iterable[tuple[int, bytes]], tokens: Collection[str], evidence: Evidence
) -> Evidence:
    """Add what the transcript lines (each with its offset) say about `tokens`."""
    wanted = [t for t in tokens if t not in evidence.found]
    for offset, raw in lines:
        quick = not wanted or not any(t.encode() in raw for t in wanted)
        if quick and b'"assistant"' not in raw:
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a line being written, or damage: it proves nothing
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "assistant":
            evidence.last_answer = offset
        for text in given_context(entry):
            for token in [t for t in wanted if t in text]:
                evidence.found[token] = offset
                wanted.remove(token)
    return evidence


def read_evidence(path: Path | None, start: int, tokens: Collection[str]) -> Evidence:
    """Read the transcript at `path` from byte `start` (from 0 when the file is shorter:
    it was rewritten) for `tokens`. Unreadable when there is no path, no file, or the
    file cannot be read."""
    if path is None:
        return Evidence(readable=False)
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(start if start <= size else 0)
            return scan_lines(_numbered(handle), tokens, Evidence(True, size))
    except OSError:
        return Evidence(readable=False)


def _numbered(handle: Any) -> Iterable[tuple[int, bytes]]:
    offset = handle.tell()
    for line in handle:
        yield offset, line
        offset += len(line)


def size_of(path: Path | None) -> int:
    """The transcript's length now (0 when it does not exist yet): where the entries
    written after a delivery begin."""
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0
