"""Conversation events and their canonical JSON form (the commit message of each event).

A message is one JSON object with sorted keys and compact separators, so equal events
always encode to equal bytes and a commit id is a hash of canonical content. Fields:
`author`, `content`, and when present `refresh` / `sync` ({target, from, to, paths,
normalized, conflicts: [{kind, paths}]}), `root` ({base, target, target_rev, mode,
project}), `rewind` ({turn, to, mode, prompt, paths, kept}), and for tool events `tool`,
`args`, `result`, `changed`, `mode_changes`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from freshline.conversation.conflicts import Conflict, ConflictKind

_SURROGATE = re.compile("[\ud800-\udfff]")


class Author(StrEnum):
    """Who produced an event."""

    USER = "user"  # the human's message (the turn's first commit, a merge when refreshed)
    ASSISTANT = "assistant"  # the model's answer
    TOOL = "tool"  # a tool call the model made and its result
    SYSTEM = "system"  # freshline itself: the root event, a sync


class Mode(StrEnum):
    """How a conversation's agent sees the workspace."""

    LIVE = "live"  # the agent reads the live workspace; trees are written from the index
    ISOLATED = "isolated"  # the agent works in its own worktree; its edits become commits


@dataclass(frozen=True)
class Refresh:
    """What a refresh or sync merged: the target moved from `from_rev` to `to`."""

    target: str  # the target's name (a ref name, or a commit id for a fixed target)
    from_rev: str | None  # the previous refresh parent (None when there was none)
    to: str  # the commit merged in (the merge's second parent)
    paths: tuple[str, ...] = ()  # paths whose entry the merge changed in the agent's tree
    normalized: tuple[str, ...] = ()  # paths whose executable bit was restored to the base
    conflicts: tuple[Conflict, ...] = ()  # conflicts recorded for the agent (sync only)

    @property
    def conflict_paths(self) -> tuple[str, ...]:
        """Every path involved in a recorded conflict, sorted."""
        return tuple(sorted({p for c in self.conflicts for p in c.paths}))


class RewindMode(StrEnum):
    """What a rewind puts back as it was when the chosen turn began."""

    CODE = "code"  # the files; the transcript stays whole
    CONVERSATION = "conversation"  # the transcript the model is given; the files stay
    BOTH = "both"  # the files and the transcript

    @property
    def restores_files(self) -> bool:
        """Whether the files go back."""
        return self is not RewindMode.CONVERSATION

    @property
    def restores_transcript(self) -> bool:
        """Whether the transcript view goes back."""
        return self is not RewindMode.CODE


@dataclass(frozen=True)
class Rewind:
    """A rewind to where human turn `turn` (its event: `to`) began. Nothing is deleted:
    the events after it stay in the chain, out of the transcript view (views.py)."""

    turn: int  # the turn's number in `log`: the n-th human event of the chain
    to: str  # the turn's human event (commit)
    mode: RewindMode
    prompt: str = ""  # the turn's message, its first line (clipped)
    paths: tuple[str, ...] = ()  # in scope: differing from the tree the agent last saw
    kept: str | None = None  # a code rewind past a refresh: the target whose merges stay


@dataclass(frozen=True)
class Root:
    """Where a conversation started: the root event's details."""

    base: str | None  # the commit the conversation branched from (its first parent)
    target: str | None  # the checkout target's name (full ref name, or a commit id)
    target_rev: str | None  # the commit the target named at open
    mode: Mode
    project: str | None = None


@dataclass(frozen=True)
class Event:
    """One transcript entry. `tree` pins the workspace it saw; `commit` is set when read."""

    author: Author
    content: str
    refresh: Refresh | None = None
    sync: Refresh | None = None
    root: Root | None = None
    rewind: Rewind | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    result: str | None = None
    changed: tuple[str, ...] = ()  # paths a tool wrote or deleted (a deliberate choice)
    mode_changes: tuple[str, ...] = ()  # paths whose mode a tool changed on purpose
    # What the model received, when more than `content`: a user message with the context
    # blocks before it. Later turns replay it (the APIs keep no state); never shown.
    wire: str | None = None
    tree: str | None = field(default=None, compare=False)
    commit: str | None = field(default=None, compare=False)

    @property
    def merged(self) -> Refresh | None:
        """The refresh or sync this event recorded, if any."""
        return self.refresh or self.sync


def _refresh_json(r: Refresh) -> dict[str, Any]:
    data: dict[str, Any] = {"target": r.target, "from": r.from_rev, "to": r.to}
    data.update(paths=list(r.paths), normalized=list(r.normalized))
    if r.conflicts:
        data["conflicts"] = [{"kind": c.kind.value, "paths": list(c.paths)} for c in r.conflicts]
    return data


def _conflict_from(item: Any) -> Conflict:
    if isinstance(item, str):  # recorded before kinds were: a path left with markers
        return Conflict(ConflictKind.CONTENT, (item,))
    try:
        kind = ConflictKind(item["kind"])
    except ValueError:
        kind = ConflictKind.OTHER
    return Conflict(kind, tuple(item["paths"]))


def _refresh_from(data: dict[str, Any]) -> Refresh:
    return Refresh(
        target=data["target"],
        from_rev=data.get("from"),
        to=data["to"],
        paths=tuple(data.get("paths", ())),
        normalized=tuple(data.get("normalized", ())),
        conflicts=tuple(_conflict_from(c) for c in data.get("conflicts", ())),
    )


def _rewind_json(r: Rewind) -> dict[str, Any]:
    data = {"turn": r.turn, "to": r.to, "mode": r.mode.value, "prompt": r.prompt,
            "paths": list(r.paths)}
    return data | ({"kept": r.kept} if r.kept is not None else {})


def _rewind_from(data: dict[str, Any]) -> Rewind:
    return Rewind(int(data["turn"]), str(data["to"]), RewindMode(data["mode"]),
                  str(data.get("prompt", "")), tuple(data.get("paths", ())), data.get("kept"))


def _root_json(r: Root) -> dict[str, Any]:
    data = {"base": r.base, "target": r.target, "target_rev": r.target_rev, "mode": r.mode.value}
    return data | ({"project": r.project} if r.project is not None else {})


def _root_from(data: dict[str, Any]) -> Root:
    return Root(
        data.get("base"), data.get("target"), data.get("target_rev"), Mode(data["mode"]),
        data.get("project"),
    )


def encode(event: Event) -> str:
    """The canonical JSON message of an event (one line, sorted keys, compact)."""
    data: dict[str, Any] = {"author": event.author.value, "content": event.content}
    if event.refresh is not None:
        data["refresh"] = _refresh_json(event.refresh)
    if event.sync is not None:
        data["sync"] = _refresh_json(event.sync)
    if event.root is not None:
        data["root"] = _root_json(event.root)
    if event.rewind is not None:
        data["rewind"] = _rewind_json(event.rewind)
    optional = {"tool": event.tool, "args": event.args, "result": event.result, "wire": event.wire}
    data.update({k: v for k, v in optional.items() if v is not None})
    if event.changed:
        data["changed"] = sorted(event.changed)
    if event.mode_changes:
        data["mode_changes"] = sorted(event.mode_changes)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # A file name that is not UTF-8 arrives as lone surrogates, which UTF-8 cannot encode:
    # JSON's \uXXXX escape keeps them, and decodes back to the same string.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def decode(message: str, commit: str | None = None, tree: str | None = None) -> Event | None:
    """The event a commit message encodes, or None for a commit that is not an event."""
    try:
        data = json.loads(message)
        author = Author(data["author"])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("content"), str):
        return None
    return Event(
        author=author,
        content=data["content"],
        refresh=_refresh_from(data["refresh"]) if "refresh" in data else None,
        sync=_refresh_from(data["sync"]) if "sync" in data else None,
        root=_root_from(data["root"]) if "root" in data else None,
        rewind=_rewind_from(data["rewind"]) if "rewind" in data else None,
        tool=data.get("tool"),
        args=data.get("args"),
        result=data.get("result"),
        changed=tuple(data.get("changed", ())),
        mode_changes=tuple(data.get("mode_changes", ())),
        wire=data.get("wire"),
        tree=tree,
        commit=commit,
    )


def as_dict(event: Event) -> dict[str, Any]:
    """The event's JSON object plus its commit and tree (for `log --json`)."""
    data: dict[str, Any] = json.loads(encode(event))
    return data | {"commit": event.commit, "tree": event.tree}
