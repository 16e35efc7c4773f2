"""What a client's transcript proves about the blocks a hook printed.

Printing is not delivery: harnesses drop hook output (a hook that timed out, an output
shape a version ignores, a text over the client's limit replaced by a preview). A client
that writes what it gives the model to a transcript (JSON lines) lets the engine look
there, on the hook's next call, for the token each block carries in its opening tag:

    found      the token is in context the agent was given: the delivery was taken
    missing    not there, though a request went out since it was printed (the hook
               calls say so, or an answer follows it): it was dropped; or the session
               moved on before any request: it never went out. The next delivery tells
               it again
    in flight  not there yet, and no request went out since: the next delivery builds
               on it rather than repeating it (a session start's context reaches the
               transcript only with the first prompt)
    unreadable a request went out but the transcript proves nothing: there is none, it
               cannot be read, or it holds no hook output at all (a client that never
               records it). Acknowledged as printed, and `session show` says so

Each client writes its own format; a `TranscriptFormat` says which entries reached the
model as context, which are the model's answers, and which record a hook's output at
all (`session/transcripts/`, one small module per client). `Moment` is where in the
client's flow a hook call comes, the same for every client: each hook adapter maps its
own event names onto it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import takewhile
from pathlib import Path
from typing import Any, BinaryIO


class Moment(StrEnum):
    """Where in a client's flow a hook call comes (each adapter maps its events here)."""

    START = "start"  # a session starts (or resumes, or lost its context): its context
    #                  goes out with the first prompt
    PROMPT = "prompt"  # the user sent a prompt: its context goes out with it
    TOOL = "tool"  # a tool starts or ran: a request went out before it
    STOP = "stop"  # the agent finished answering a prompt
    COMPACT = "compact"  # its context is being compacted (a client that says so before)
    END = "end"  # the session ended


class Verdict(StrEnum):
    """What became of one printed delivery."""

    FOUND = "found"  # in the transcript: the agent was given it
    MISSING = "missing"  # it went out without reaching the agent, or never will: tell again
    IN_FLIGHT = "in flight"  # it may still go out with the next request: wait
    UNREADABLE = "unreadable"  # it went out, but nothing can tell: taken as printed


class Stage(StrEnum):
    """Where a printed delivery is in the client's flow, from the hook calls alone."""

    PENDING = "pending"  # the request that would carry it has not gone out yet
    SENT = "sent"  # a request carrying it went out
    DEAD = "dead"  # the session moved on before any request: it never went out


def stage(printed_at: Moment, prompted: bool, now: Moment) -> Stage:
    """The stage of a delivery printed at `printed_at`, seen from a call at `now`.
    `prompted`: a PROMPT call came since it was printed.

    A prompt's context goes out with its prompt, so any later call comes after the
    request. A start's context waits for the first prompt: it went out once a prompt came;
    a new start or an end before any prompt means it never will. A call inside the turn
    (a tool's, its end) may come before the client wrote the request to its transcript
    (Claude Code writes it every 100 ms): it decides only once an answer follows.
    """
    if now in (Moment.TOOL, Moment.STOP):
        return Stage.PENDING
    if printed_at is not Moment.START or prompted:
        return Stage.SENT
    if now is Moment.PROMPT:
        return Stage.PENDING
    return Stage.DEAD


def verdict(found: bool, answered: bool, where: Stage, proves: bool) -> Verdict:
    """The fate of one delivery: its token `found` in given context, an answer written
    after it (`answered`), its stage, and whether the transcript `proves` anything."""
    if found:
        return Verdict.FOUND
    if where is Stage.DEAD:
        return Verdict.MISSING
    if not answered and where is Stage.PENDING:
        return Verdict.IN_FLIGHT
    return Verdict.MISSING if proves else Verdict.UNREADABLE


class TranscriptFormat(ABC):
    """How one client's transcript (JSON lines) records what reached its model."""

    name: str  # the client, as people name it
    # Bytes that every answer and every hook-output line holds: other lines are skipped
    # unparsed unless they carry a token (none: every line is parsed).
    markers: tuple[bytes, ...] = ()

    @abstractmethod
    def given(self, entry: dict[str, Any]) -> Iterable[str]:
        """The texts of an entry that reached the model as context."""

    @abstractmethod
    def answered(self, entry: dict[str, Any]) -> bool:
        """Whether an entry is the model's answer (a request went out before it)."""

    @abstractmethod
    def hook_output(self, entry: dict[str, Any]) -> bool:
        """Whether an entry records a hook's output (any hook's, taken or not)."""


@dataclass
class Evidence:
    """What one read of a transcript found, from some offset on."""

    readable: bool
    size: int = 0  # the transcript's length in bytes when read
    found: dict[str, int] = field(default_factory=dict)  # token -> offset of its entry
    last_answer: int = -1  # offset of the last answer (-1: none)
    hooked: bool = False  # some entry (anywhere in the file) records a hook's output

    @property
    def proves(self) -> bool:
        """Whether a token's absence means anything: the transcript was read and records
        hook output at all."""
        return self.readable and self.hooked

    def answered_after(self, offset: int) -> bool:
        """Whether the model answered in an entry written at or after `offset`."""
        return self.last_answer >= offset


def texts(value: Any) -> Iterable[str]:
    """Every string inside a JSON value (message content is a string or a list of parts)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)


def _entries(
    lines: Iterable[tuple[int, bytes]], wanted: list[str], fmt: TranscriptFormat, all_: bool
) -> Iterable[tuple[int, dict[str, Any]]]:
    """The parsed entries that may matter; `all_`: every one (no quick test)."""
    for offset, raw in lines:
        if not all_ and not any(m in raw for m in fmt.markers) \
                and not any(t.encode() in raw for t in wanted):
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a line being written, or damage: it proves nothing
        if isinstance(entry, dict):
            yield offset, entry


def scan_lines(
    lines: Iterable[tuple[int, bytes]],
    tokens: Collection[str],
    fmt: TranscriptFormat,
    evidence: Evidence,
) -> Evidence:
    """Add what the transcript lines (each with its offset) say about `tokens`."""
    wanted = [t for t in tokens if t not in evidence.found]
    for offset, entry in _entries(lines, wanted, fmt, all_=not fmt.markers):
        if fmt.answered(entry):
            evidence.last_answer = offset
        evidence.hooked = evidence.hooked or fmt.hook_output(entry)
        for text in fmt.given(entry):
            for token in [t for t in wanted if t in text]:
                evidence.found[token] = offset
                wanted.remove(token)
    return evidence


def read_evidence(
    path: Path | None, start: int, tokens: Collection[str], fmt: TranscriptFormat | None
) -> Evidence:
    """Read the transcript at `path` from byte `start` (from 0 when the file is shorter:
    it was rewritten) for `tokens`, and whether it records hook output anywhere.
    Unreadable when there is no path, no format to read it with, no file, or the file
    cannot be read."""
    if path is None or fmt is None:
        return Evidence(readable=False)
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            start = start if start <= size else 0
            handle.seek(start)
            evidence = scan_lines(_numbered(handle), tokens, fmt, Evidence(True, size))
            if not evidence.hooked and start:
                evidence.hooked = _hooked_before(handle, start, fmt)
            return evidence
    except OSError:
        return Evidence(readable=False)


def _hooked_before(handle: BinaryIO, end: int, fmt: TranscriptFormat) -> bool:
    """Whether an entry before byte `end` records a hook's output."""
    handle.seek(0)
    lines = takewhile(lambda line: line[0] < end, _numbered(handle))
    return scan_lines(lines, (), fmt, Evidence(True)).hooked


def _numbered(handle: BinaryIO) -> Iterable[tuple[int, bytes]]:
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


@dataclass(frozen=True)
class Witness:
    """A hook call's view of its client's transcript: where it is (None: the payload
    named none), how to read it (None: freshline reads none of this client's), and where
    in the client's flow the call comes."""

    transcript: Path | None
    format: TranscriptFormat | None
    moment: Moment

    @property
    def blind(self) -> str | None:
        """Why nothing this client writes can prove a delivery, if so."""
        if self.format is None:
            return "freshline reads no transcript of this client"
        if self.transcript is None:
            return "the hook's payload names no transcript"
        return None
