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
(`freshline.withholding`; `textview.py`), and says how many. Writes replace a file (a
temporary file renamed over it), so a hard link never carries them outside; a write that
would put `[secret withheld: …]` where a secret stands is refused.
"""

from __future__ import annotations

import io
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from freshline.access import Rules
from freshline.agent import textview, tool_specs
from freshline.agent.confine import Confined, Confinement, ToolError
from freshline.agent.messages import ToolCall, ToolResult, ToolSpec
from freshline.agent.textview import SNIFF, is_binary
from freshline.agent.witness import Witness
from freshline.beneath import Kind, Opened, files_under, open_beneath, open_entry
from freshline.errors import FreshlineError, WorkspaceError
from freshline.materialize.status import DocStatus, Probe
from freshline.secretscan import WITHHELD_PREFIX
from freshline.session.ledger import TurnLedger, snapshot_fingerprint
from freshline.withholding import Withholder

DEFAULT_OUTPUT_CAP = 20_000
LIST_LIMIT = 500  # entries shown by one list call
MATCH_LIMIT = 200  # matching lines shown by one search call
SEARCH_FILE_LIMIT = 5_000_000  # bytes; larger files are skipped by search
LINE_PREVIEW = 200  # characters of a matching line shown by search
_NOTE_ROOM = 300  # a tool may exceed the cap by its own note on how it was capped


class ToolMode(StrEnum):
    """Which tools a toolbox offers."""

    LIVE = "live"  # read-only: the agent reads the live workspace
    ISOLATED = "isolated"  # the agent works in its own worktree and may change files


DocumentLookup = Callable[[str], Probe | None]
"""Given a root-relative path, the materializer's probe of it, or None for a plain file."""

ChangesPager = Callable[[int | None, int, int], str]
"""Given `since` (None: the session's cursor), a page number and the most characters a page
may take, that page of the session's project's changes."""


@dataclass
class _Outcome:
    text: str
    is_error: bool = False
    changed: tuple[str, ...] = ()
    mode_changes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Searched:
    label: str  # how its hits are shown
    rel: str  # the source's root-relative path
    text: str  # its text (a document's: its snapshot's), secrets withheld
    withheld: bool  # whether any were
    blob: str | None  # the content shown: the bytes read, or the document's fingerprint


def _arg(args: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    """One argument of a tool call, checked for type; integers may come as digit strings."""
    value = args.get(name)
    if value is None:
        if default is ...:
            raise ToolError(f"missing argument {name!r}")
        return default
    if kind is int and isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ToolError(f"argument {name!r} must be a {kind.__name__}")
    return value


def _search_notes(hits: list[str], withheld: int, linked: list[str]) -> str:
    """A search's lines, then how many secrets its lines withheld and which files with
    more than one hard link it did not search."""
    lines = list(hits)
    if withheld:
        lines.append(f"[{withheld} {'secret' if withheld == 1 else 'secrets'} withheld]")
    if linked:
        shown = ", ".join(linked[:5]) + (f" and {len(linked) - 5} more" if len(linked) > 5 else "")
        lines.append(f"[not searched, each has more than one hard link: {shown}]")
    return "\n".join(lines)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def encodable(text: str) -> str:
    """`text` with lone surrogates (undecodable file-name bytes, or a model's JSON) written
    as escapes, so it can be encoded as UTF-8: for the model's API and the commit."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


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
        self.confinement = Confinement(root, rules)
        self.withholder = withholder or Withholder()
        self.mode = ToolMode(mode)
        self.read_document = read_document or (lambda rel: None)
        self.output_cap = output_cap
        self.witness = Witness(ledger)
        handlers: dict[str, tuple[ToolSpec, Callable[[dict[str, Any]], _Outcome]]] = {
            "list": (tool_specs.LIST, self._list),
            "read": (tool_specs.READ, self._read),
            "search": (tool_specs.SEARCH, self._search),
        }
        self.changes = changes
        if changes is not None:
            handlers["changes"] = (tool_specs.CHANGES, self._changes)
        if self.mode is ToolMode.ISOLATED:
            handlers["write"] = (tool_specs.WRITE, self._write)
            handlers["edit"] = (tool_specs.EDIT, self._edit)
            handlers["delete"] = (tool_specs.DELETE, self._delete)
            if offer_chmod:
                handlers["chmod"] = (tool_specs.CHMOD, self._chmod)
        self._handlers = handlers

    @property
    def root(self) -> Path:
        """The directory every path is confined to."""
        return self.confinement.root

    def specs(self) -> list[ToolSpec]:
        """The definitions of the tools this toolbox offers."""
        return [spec for spec, _ in self._handlers.values()]

    def run(self, call: ToolCall) -> ToolResult:
        """Run one tool call; refusals and failures come back as error results."""
        try:
            outcome = self._dispatch(call)
        except ToolError as exc:
            outcome = _Outcome(f"{call.name}: {exc}", is_error=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            outcome = _Outcome(f"{call.name} failed: {reason}", is_error=True)
        text = encodable(outcome.text)
        if len(text) > self.output_cap + _NOTE_ROOM:
            text = text[: self.output_cap] + f"\n[output capped at {self.output_cap} characters]"
        return ToolResult(call.id, call.name, text, outcome.is_error, outcome.changed,
                          outcome.mode_changes)

    def _dispatch(self, call: ToolCall) -> _Outcome:
        entry = self._handlers.get(call.name)
        if entry is not None:
            return entry[1](call.arguments if isinstance(call.arguments, dict) else {})
        if call.name in {"write", "edit", "delete", "chmod"}:
            raise ToolError("not available in live mode: the workspace is read-only here")
        raise ToolError(f"unknown tool; available: {', '.join(self._handlers)}")

    # --- reading -----------------------------------------------------------------------------

    def _list(self, args: dict[str, Any]) -> _Outcome:
        with self.confinement.open(_arg(args, "path", str, ".")) as target:
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
        return _Outcome("\n".join(lines))

    def _visible(self, rel: str, entry: os.DirEntry[str]) -> bool:
        try:
            folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            return False
        return self.confinement.visible(rel, folder)

    def _describe(self, entry: os.DirEntry[str]) -> str:
        if entry.is_symlink():
            return f"{entry.name}@"
        if entry.is_dir():
            return f"{entry.name}/"
        info = entry.stat()
        if info.st_nlink > 1 and not self.confinement.rules.allow_hardlinks:
            return f"{entry.name}  ({info.st_size} bytes; {info.st_nlink} hard links: not read)"
        return f"{entry.name}  ({info.st_size} bytes)"

    def _read(self, args: dict[str, Any]) -> _Outcome:
        start, end = _arg(args, "start", int, None), _arg(args, "end", int, None)
        with self.confinement.open(_arg(args, "path", str)) as target:
            if target.kind is Kind.FOLDER:
                raise ToolError(f"{target.shown}: a directory; use list")
            if target.kind is not Kind.FILE:
                raise ToolError(f"{target.shown}: no such file")
            view = self.read_document(target.rel)
            blob: str | None
            if view is None:
                loaded = textview.load(target.opened, target.shown, target.rel, self.withholder)
                outcome, blob = _Outcome(self._shown(loaded, target, start, end)), loaded.blob
            else:
                outcome = self._read_document(target, view, start, end)
                blob = snapshot_fingerprint(view)
        if not outcome.is_error:
            self.witness.saw(target.rel, blob)
        return outcome

    def _read_document(
        self, target: Confined, view: Probe, start: int | None, end: int | None
    ) -> _Outcome:
        if view.status is DocStatus.DELETED:
            raise ToolError(f"{target.shown}: no such file")
        if view.status is DocStatus.PENDING:
            return _Outcome(f"{target.shown}: a document being converted to text; no snapshot "
                            "yet. It will be readable on a later turn.")
        if view.status is DocStatus.FAILED:
            why = f" ({view.reason})" if view.reason else ""
            return _Outcome(f"{target.shown}: converting this document to text failed{why}; "
                            "its content cannot be read.", is_error=True)
        if view.snapshot is None:
            raise ToolError(f"{target.shown}: its snapshot is missing; try again on a later turn")
        with self.confinement.open_snapshot(view.snapshot) as snapshot:
            if snapshot.kind is not Kind.FILE:
                raise ToolError(f"{target.shown}: its snapshot is missing; try again on a "
                                "later turn")
            loaded = textview.load(snapshot, target.shown, target.rel, self.withholder)
        note = (" (an older snapshot: the document changed since; a new one is on its way)"
                if view.status is DocStatus.STALE else "")
        header = f"[text snapshot of {target.shown}{note}]\n"
        return _Outcome(header + self._shown(loaded, target, start, end))

    def _shown(self, loaded: textview.FileText, target: Confined, start: int | None,
               end: int | None) -> str:
        """A file's (or snapshot's) text, whole or the lines asked for, with a line saying
        how many secrets were withheld."""
        shown = target.shown
        if start is None and end is None:
            return loaded.noted(textview.whole(loaded.text, shown, loaded.size, self.output_cap))
        first = 1 if start is None else start
        return loaded.noted(textview.lines(loaded.text, shown, first, end, self.output_cap))

    def _changes(self, args: dict[str, Any]) -> _Outcome:
        since, page = _arg(args, "since", int, None), _arg(args, "page", int, 1)
        if (since is not None and since < 0) or page < 1:
            raise ToolError("since must be at least 0 and page at least 1")
        assert self.changes is not None
        try:
            return _Outcome(self.withholder.text(self.changes(since, page, self.output_cap)).text)
        except FreshlineError as exc:
            raise ToolError(str(exc)) from None

    # --- search ------------------------------------------------------------------------------

    def _search(self, args: dict[str, Any]) -> _Outcome:
        pattern = _arg(args, "pattern", str)
        flags = re.IGNORECASE if _arg(args, "ignore_case", bool, False) else 0
        try:
            regex = re.compile(pattern, flags)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from exc
        hits: list[str] = []
        searched = used = withheld = 0
        linked: list[str] = []
        with self.confinement.open(_arg(args, "path", str, ".")) as base:
            for source in self._searchable(base, linked):
                searched += 1
                found = self._matches(source, regex)
                for number, line in found:
                    hit = f"{source.label}:{number}: {line.rstrip()[:LINE_PREVIEW]}"
                    hits.append(hit)
                    withheld += hit.count(WITHHELD_PREFIX) if source.withheld else 0
                    used += len(hit) + 1
                    if len(hits) >= MATCH_LIMIT or used > self.output_cap:
                        self.witness.saw(source.rel, source.blob)
                        hits.append(f"[stopped after {len(hits)} matches; narrow the pattern "
                                    "or path]")
                        return _Outcome(_search_notes(hits, withheld, linked))
                if found:
                    self.witness.saw(source.rel, source.blob)
        if not hits:
            files = "1 file" if searched == 1 else f"{searched} files"
            hits = [f"no matches for /{pattern}/ in {files}"]
        return _Outcome(_search_notes(hits, withheld, linked))

    def _searchable(self, base: Confined, linked: list[str]) -> Iterator[_Searched]:
        """Each text source the rules admit under `base`, read once and scanned; files
        with more than one hard link are left out and named in `linked` (unless the rules
        allow them)."""
        for opened in self._walk(base):
            with opened:
                shown = self.confinement.shown(opened.rel)
                try:
                    source = self._source(opened, shown, linked)
                except (OSError, ToolError):
                    continue  # vanished, unreadable, or grew past what is scanned
            if source is not None:
                yield source

    def _source(self, opened: Opened, shown: str, linked: list[str]) -> _Searched | None:
        """What search reads of one open file: its text, or its document's snapshot."""
        view = self.read_document(opened.rel)
        links = opened.info.st_nlink if opened.info is not None else 1
        if links > 1 and not self.confinement.rules.allow_hardlinks:
            linked.append(shown)
            return None
        if view is None:
            if opened.size > SEARCH_FILE_LIMIT or is_binary(opened.read(SNIFF)):
                return None
            loaded = textview.load(opened, shown, opened.rel, self.withholder)
            return _Searched(shown, opened.rel, loaded.text, bool(loaded.kinds), loaded.blob)
        if view.snapshot is None:
            return None
        with self.confinement.open_snapshot(view.snapshot) as snapshot:
            if snapshot.kind is not Kind.FILE:
                return None
            label = f"{shown} (snapshot)"
            loaded = textview.load(snapshot, label, opened.rel, self.withholder)
        return _Searched(label, opened.rel, loaded.text, bool(loaded.kinds),
                         snapshot_fingerprint(view))

    def _walk(self, base: Confined) -> Iterator[Opened]:
        """Every regular file the rules admit under `base`, in path order, opened from its
        folder's descriptor (no link followed). Iterative: a tree thousands of levels deep
        is walked too."""
        if base.kind is Kind.FILE:
            yield replace(base.opened, fd=os.dup(base.opened.fd))
            return
        if base.kind is not Kind.FOLDER:
            return
        for folder_fd, name, rel in files_under(base.opened, self.confinement.visible):
            try:
                opened = open_entry(folder_fd, name, rel)
            except OSError:
                continue  # unreadable since the walk saw it
            if opened.kind is Kind.FILE:
                yield opened

    @staticmethod
    def _matches(source: _Searched, regex: re.Pattern[str]) -> list[tuple[int, str]]:
        """(number, line) of each matching line, searched in the text with its secrets
        withheld: a pattern cannot probe a withheld value."""
        return [(number, line)
                for number, line in enumerate(io.StringIO(source.text, newline=""), 1)
                if regex.search(line)]

    # --- changing (isolated mode) ------------------------------------------------------------

    def _writable(self, args: dict[str, Any], reads: bool = False) -> Confined:
        """The path a change names. A file with more than one hard link may be replaced
        or deleted (its other names keep their content), not edited, which reads it."""
        raw = _arg(args, "path", str)
        if encodable(raw) != raw:
            raise ToolError("the path is not valid Unicode (it holds a lone surrogate); refused")
        target = self.confinement.resolve(raw, hardlinks=not reads)
        if target.is_dir:
            raise ToolError(f"{target.shown}: a directory")
        return target

    @staticmethod
    def _put(path: Path, text: str) -> None:
        """Replace `path` by a new file with `text`, keeping the old file's mode.

        A new inode, never a write in place: a hard link to the file (perhaps from outside
        the worktree) keeps its old content. On failure nothing partial is left.
        """
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = None
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.freshline-tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with open(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    def _replace(self, target: Confined, text: str) -> None:
        """Write `text` over `target` and record it as the agent's own write."""
        self._keep_secrets(target, text)
        self._put(target.path, text)
        self.witness.wrote(target.rel, text)

    def _keep_secrets(self, target: Confined, text: str) -> None:
        """Refuse to write more `[secret withheld: …]` markers into a file than it holds,
        when it holds secrets: the agent was shown the markers, and writing them back
        would destroy what they stand for."""
        if WITHHELD_PREFIX not in text:
            return
        data = self._current(target)
        if data is None:
            return
        old = data.decode("utf-8", "replace")
        if text.count(WITHHELD_PREFIX) > old.count(WITHHELD_PREFIX) and \
                self.withholder.text(old, target.rel).count:
            raise ToolError(f"{target.shown}: holds secrets withheld from you; writing "
                            "'[secret withheld: …]' over them would destroy them. Change "
                            "the file with edit, around them; refused")

    def _write(self, args: dict[str, Any]) -> _Outcome:
        target = self._writable(args)
        content = _arg(args, "content", str)
        existed = target.path.exists()
        self.witness.guard(target)
        target.path.parent.mkdir(parents=True, exist_ok=True)
        self._replace(target, content)
        what = "replaced" if existed else "created"
        return _Outcome(f"{what} {target.shown} ({len(content.encode())} bytes)",
                        changed=(target.rel,))

    def _edit(self, args: dict[str, Any]) -> _Outcome:
        target = self._writable(args, reads=True)
        old, new = _arg(args, "old", str), _arg(args, "new", str)
        data = self._current(target)
        if data is None:
            raise ToolError(f"{target.shown}: no such file; use write to create it")
        if not old:
            raise ToolError("old must not be empty")
        if is_binary(data[:SNIFF]):
            raise ToolError(f"{target.shown}: binary file, {len(data)} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"{target.shown}: not UTF-8 text; use write") from exc
        self.witness.guard(target)
        count = text.count(old)
        if count != 1:
            where = "not found" if count == 0 else f"found {count} times"
            raise ToolError(f"{target.shown}: old text {where}; it must match exactly once "
                            "(include more surrounding text)")
        self._replace(target, text.replace(old, new, 1))
        return _Outcome(f"edited {target.shown}", changed=(target.rel,))

    def _current(self, target: Confined) -> bytes | None:
        """What the file a change names holds now (None: no file), read beneath the root
        through no link: the name checked is the file read."""
        try:
            with open_beneath(self.confinement.root, target.rel, follow=False) as opened:
                return opened.read() if opened.kind is Kind.FILE else None
        except WorkspaceError as exc:
            raise ToolError(f"{target.shown}: {exc}; refused") from None

    def _delete(self, args: dict[str, Any]) -> _Outcome:
        target = self._writable(args)
        given = Path(os.path.normpath(self.confinement.root / _arg(args, "path", str)))
        if given.is_symlink():  # deleting it would delete the file it points at
            raise ToolError(f"{given}: a symbolic link; delete refuses links")
        if not target.path.is_file():
            raise ToolError(f"{target.shown}: no such file")
        target.path.unlink()
        self.witness.deleted(target.rel)
        return _Outcome(f"deleted {target.shown}", changed=(target.rel,))

    def _chmod(self, args: dict[str, Any]) -> _Outcome:
        target = self._writable(args)
        executable = _arg(args, "executable", bool)
        if not target.path.is_file():
            raise ToolError(f"{target.shown}: no such file")
        st = target.path.stat()
        if st.st_nlink > 1:
            raise ToolError(f"{target.shown}: has {st.st_nlink} hard links, and a mode belongs "
                            "to all of them; refused")
        mode = stat.S_IMODE(st.st_mode)
        # execute bits follow the read bits, as git's 755/644 do
        mode = mode | ((mode & 0o444) >> 2) if executable else mode & ~0o111
        os.chmod(target.path, mode)
        git_mode = "100755" if executable else "100644"
        return _Outcome(f"{target.shown}: mode {mode:o}", changed=(target.rel,),
                        mode_changes={target.rel: git_mode})
