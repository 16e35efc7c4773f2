"""The tools a model may use, confined to one root: list, read, search, and in isolated mode
write, edit, delete and chmod; with a session, `changes` pages its project's change list.

With a turn's ledger (`freshline.session.ledger.TurnLedger`), `read` and `search` record
the content (git blob id) of each file they showed, and `write` and `edit` what they wrote;
`write` and `edit` then refuse to replace a file whose content is not what the agent last
read or wrote in this conversation ("… changed since you read it at turn 3; read it
again"), judged by content, never by mtime. A file the agent never saw may be created,
not overwritten.

A tool never raises to the model's caller: refusals and failures become error results the
model reads and can act on. Every output is capped, so a huge file or a broad search cannot
flood the context. What a tool may see is decided by its `Rules` (`freshline.access`): the
session's project, never a secret, never freshline's or git's own files, never a file with
more than one hard link. What it shows of a file has every secret in it withheld
(`freshline.withholding`; `textview.py`), and says how many. `search` is `search.py`;
the tools that change files, through their folder's descriptor, are `writes.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from freshline.access import Rules
from freshline.agent import search, textview, tool_specs, writes
from freshline.agent.calls import DocumentLookup, Means, Outcome, arg, encodable
from freshline.agent.confine import Confined, Confinement, ToolError
from freshline.agent.messages import ToolCall, ToolResult, ToolSpec
from freshline.agent.witness import Witness
from freshline.beneath import Kind
from freshline.errors import FreshlineError
from freshline.materialize.status import DocStatus, Probe
from freshline.session.ledger import TurnLedger, snapshot_fingerprint
from freshline.withholding import Withholder

__all__ = ["ChangesPager", "DocumentLookup", "Toolbox", "ToolMode", "encodable"]

DEFAULT_OUTPUT_CAP = 20_000
LIST_LIMIT = 500  # entries shown by one list call
_NOTE_ROOM = 300  # a tool may exceed the cap by its own note on how it was capped


class ToolMode(StrEnum):
    """Which tools a toolbox offers."""

    LIVE = "live"  # read-only: the agent reads the live workspace
    ISOLATED = "isolated"  # the agent works in its own worktree and may change files


ChangesPager = Callable[[int | None, int, int], str]
"""Given `since` (None: the session's cursor), a page number and the most characters a page
may take, that page of the session's project's changes."""


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


class Toolbox:
    """The tools offered to a model, confined to `root`.

    `rules` say what every tool may see (default: the whole root but internal files and
    secrets); `read_document` tells read and search which paths are converted documents
    (read their snapshot instead); `changes` offers the `changes` tool, paging the
    session's project's changes (it reads no file); `ledger` records what the agent saw
    and wrote, and guards writes by content; `withholder` withholds secrets from what the
    tools show (default: every secret, no path allowed).
    """

    def __init__(
        self,
        root: Path,
        mode: ToolMode | str = ToolMode.LIVE,
        rules: Rules | None = None,
        read_document: DocumentLookup | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        offer_chmod: bool = True,
        changes: ChangesPager | None = None,
        ledger: TurnLedger | None = None,
        withholder: Withholder | None = None,
    ) -> None:
        self.means = Means(Confinement(root, rules), withholder or Withholder(),
                           Witness(ledger), read_document or (lambda rel: None), output_cap)
        self.mode = ToolMode(mode)
        handlers: dict[str, tuple[ToolSpec, Callable[[dict[str, Any]], Outcome]]] = {
            "list": (tool_specs.LIST, self._list),
            "read": (tool_specs.READ, self._read),
            "search": (tool_specs.SEARCH, self._on(search.search)),
        }
        self.changes = changes
        if changes is not None:
            handlers["changes"] = (tool_specs.CHANGES, self._changes)
        if self.mode is ToolMode.ISOLATED:
            handlers["write"] = (tool_specs.WRITE, self._on(writes.write))
            handlers["edit"] = (tool_specs.EDIT, self._on(writes.edit))
            handlers["delete"] = (tool_specs.DELETE, self._on(writes.delete))
            if offer_chmod:
                handlers["chmod"] = (tool_specs.CHMOD, self._on(writes.chmod))
        self._handlers = handlers

    def _on(
        self, tool: Callable[[Means, dict[str, Any]], Outcome]
    ) -> Callable[[dict[str, Any]], Outcome]:
        return lambda args: tool(self.means, args)

    @property
    def root(self) -> Path:
        """The directory every path is confined to."""
        return self.means.confinement.root

    def specs(self) -> list[ToolSpec]:
        """The definitions of the tools this toolbox offers."""
        return [spec for spec, _ in self._handlers.values()]

    def run(self, call: ToolCall) -> ToolResult:
        """Run one tool call; refusals and failures come back as error results."""
        try:
            outcome = self._dispatch(call)
        except ToolError as exc:
            outcome = Outcome(f"{call.name}: {exc}", is_error=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            outcome = Outcome(f"{call.name} failed: {reason}", is_error=True)
        text, cap = encodable(outcome.text), self.means.output_cap
        if len(text) > cap + _NOTE_ROOM:
            text = text[:cap] + f"\n[output capped at {cap} characters]"
        return ToolResult(call.id, call.name, text, outcome.is_error, outcome.changed,
                          outcome.mode_changes)

    def _dispatch(self, call: ToolCall) -> Outcome:
        entry = self._handlers.get(call.name)
        if entry is not None:
            return entry[1](call.arguments if isinstance(call.arguments, dict) else {})
        if call.name in {"write", "edit", "delete", "chmod"}:
            raise ToolError("not available in live mode: the workspace is read-only here")
        raise ToolError(f"unknown tool; available: {', '.join(self._handlers)}")

    # --- reading -----------------------------------------------------------------------------

    def _list(self, args: dict[str, Any]) -> Outcome:
        with self.means.confinement.open(arg(args, "path", str, ".")) as target:
            if target.kind is Kind.FILE:
                raise ToolError(f"{target.shown}: a file; use read")
            if target.kind is not Kind.FOLDER:
                raise ToolError(f"{target.shown}: no such directory")
            with os.scandir(target.opened.fd) as found:  # the folder checked, not its name
                entries = sorted(
                    (e for e in found if self._visible(_join(target.rel, e.name), e)),
                    key=lambda e: e.name,
                )
                lines = [self._describe(entry) for entry in entries[:LIST_LIMIT]]
        count = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
        lines.insert(0, f"{target.shown}/ ({count})")
        if len(entries) > LIST_LIMIT:
            lines.append(f"[... and {len(entries) - LIST_LIMIT} more entries]")
        return Outcome("\n".join(lines))

    def _visible(self, rel: str, entry: os.DirEntry[str]) -> bool:
        try:
            folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            return False
        return self.means.confinement.visible(rel, folder)

    def _describe(self, entry: os.DirEntry[str]) -> str:
        if entry.is_symlink():
            return f"{entry.name}@"
        if entry.is_dir():
            return f"{entry.name}/"
        info = entry.stat()
        if info.st_nlink > 1 and not self.means.confinement.rules.allow_hardlinks:
            return f"{entry.name}  ({info.st_size} bytes; {info.st_nlink} hard links: not read)"
        return f"{entry.name}  ({info.st_size} bytes)"

    def _read(self, args: dict[str, Any]) -> Outcome:
        start, end = arg(args, "start", int, None), arg(args, "end", int, None)
        with self.means.confinement.open(arg(args, "path", str)) as target:
            if target.kind is Kind.FOLDER:
                raise ToolError(f"{target.shown}: a directory; use list")
            if target.kind is not Kind.FILE:
                raise ToolError(f"{target.shown}: no such file")
            view = self.means.read_document(target.rel)
            blob: str | None
            if view is None:
                loaded = textview.load(target.opened, target.shown, target.rel,
                                       self.means.withholder)
                outcome, blob = Outcome(self._shown(loaded, target, start, end)), loaded.blob
            else:
                outcome = self._read_document(target, view, start, end)
                blob = snapshot_fingerprint(view)
        if not outcome.is_error:
            self.means.witness.saw(target.rel, blob)
        return outcome

    def _read_document(
        self, target: Confined, view: Probe, start: int | None, end: int | None
    ) -> Outcome:
        if view.status is DocStatus.DELETED:
            raise ToolError(f"{target.shown}: no such file")
        if view.status is DocStatus.PENDING:
            return Outcome(f"{target.shown}: a document being converted to text; no snapshot "
                            "yet. It will be readable on a later turn.")
        if view.status is DocStatus.FAILED:
            why = f" ({view.reason})" if view.reason else ""
            return Outcome(f"{target.shown}: converting this document to text failed{why}; "
                            "its content cannot be read.", is_error=True)
        if view.snapshot is None:
            raise ToolError(f"{target.shown}: its snapshot is missing; try again on a later turn")
        with self.means.confinement.open_snapshot(view.snapshot) as snapshot:
            if snapshot.kind is not Kind.FILE:
                raise ToolError(f"{target.shown}: its snapshot is missing; try again on a "
                                "later turn")
            loaded = textview.load(snapshot, target.shown, target.rel, self.means.withholder)
        note = (" (an older snapshot: the document changed since; a new one is on its way)"
                if view.status is DocStatus.STALE else "")
        header = f"[text snapshot of {target.shown}{note}]\n"
        return Outcome(header + self._shown(loaded, target, start, end))

    def _shown(self, loaded: textview.FileText, target: Confined, start: int | None,
               end: int | None) -> str:
        """A file's (or snapshot's) text, whole or the lines asked for, with a line saying
        how many secrets were withheld."""
        shown, cap = target.shown, self.means.output_cap
        if start is None and end is None:
            return loaded.noted(textview.whole(loaded.text, shown, loaded.size, cap))
        first = 1 if start is None else start
        return loaded.noted(textview.lines(loaded.text, shown, first, end, cap))

    def _changes(self, args: dict[str, Any]) -> Outcome:
        since, page = arg(args, "since", int, None), arg(args, "page", int, 1)
        if (since is not None and since < 0) or page < 1:
            raise ToolError("since must be at least 0 and page at least 1")
        assert self.changes is not None
        try:
            page_text = self.changes(since, page, self.means.output_cap)
            return Outcome(self.means.withholder.text(page_text).text)
        except FreshlineError as exc:
            raise ToolError(str(exc)) from None
