"""Scanning (I/O): walk the workspace, compare with the index like git does, observe.

`lstat` every file; re-hash only when size, mtime_ns or inode differ from the index.
Symbolic links are recorded as links (their target's blob id) and never followed.
A file that cannot be read keeps its previous entry and yields a warning; a directory
that cannot be listed keeps every entry below it. Ignored paths (`freshline.ignore`) are
never looked at: the walk prunes an ignored folder without listing it.

A file written twice within one timestamp tick can keep size and mtime ("racily clean",
as git calls it). An entry whose mtime is that close to the scan is stored with
mtime_ns = 0, so the next scan hashes it again instead of trusting its stat.

A listing scan (an empty index, a caller that may defer) takes no lstat and reads no
regular file: it stores their names, to be read by a later flush (`tracker/listing.py`);
where the file system's clock cannot be read (`fs_clock`), it reads them as a full scan.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import accumulate, chain
from pathlib import Path

from freshline.beneath import Kind, open_beneath
from freshline.errors import WorkspaceError
from freshline.ignore import Checks, IgnoreRules, IgnoreState
from freshline.markdown import parse_note
from freshline.paths import INTERNAL_NAMES, is_internal
from freshline.scope import is_markdown
from freshline.store import Store
from freshline.store.db import decode_path, encode_path
from freshline.store.files import Stats
from freshline.store.records import ChangeKind, FileKind, IndexEntry
from freshline.tracker.hashing import blob_id_file, blob_id_link, git_mode
from freshline.tracker.listing import (
    UNSTATED,
    fs_clock,
    listed_entry,
    twin_blobs,
    unstated,
    unstated_entry,
)
from freshline.tracker.observed import FolderRename, Observed, content_of
from freshline.tracker.renames import folder_renames, pair_renames
from freshline.tracker.similarity import TEXT_CAP, sketch

RACY_WINDOW_NS = 2_000_000_000
# Index stats no file has, nor an entry listed by name (`UNSTATED`: one that is stat'ed,
# not read, while its file is untouched since the listing): the file is read again.
_UNKNOWN = (UNSTATED - 1, UNSTATED - 1, UNSTATED - 1)

_INTERNAL = frozenset(os.fsencode(name) for name in INTERNAL_NAMES)

Memo = dict[str, tuple[os.stat_result, IndexEntry, bytes | None]]
"""What one flush already hashed (path → stat it was hashed at, entry, sketch): a scan
redone under the write lock re-reads only what changed since the first pass."""


@dataclass
class ScanResult:
    """What one scan found: observations for the log and index rows to write."""

    observed: list[Observed] = field(default_factory=list)
    folders: list[FolderRename] = field(default_factory=list)
    put: list[IndexEntry] = field(default_factory=list)
    sketches: dict[str, bytes] = field(default_factory=dict)  # of the text files in `put`
    remove: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scanned: int = 0
    ignore: IgnoreState | None = None  # the rules a full scan walked by, every file read
    from_empty: bool = False  # a full scan of an empty index: `put` is the whole index now
    listed_read: bool = False  # every entry listed, not read, was read (or left the index)
    listed_at: int | None = None  # a listing: when it began (`tracker/listing.py`)

    def changed(self, name: str) -> bool:
        """Whether a file of this name (at any depth) was created, changed or removed."""
        return any(
            e is not None and e.path.rpartition("/")[2] == name
            for o in self.observed
            for e in (o.old, o.new)
        )


class Scanner:
    """One scan of one workspace against the index in `store`."""

    def __init__(
        self,
        root: Path,
        store: Store,
        rules: IgnoreRules | None = None,
        memo: Memo | None = None,
        parse: bool = True,
        listing: bool = False,
        listed_at: int = 0,
    ) -> None:
        self.root = str(root)
        self.broot = os.fsencode(self.root)
        self.store = store
        self.rules = rules or IgnoreRules(trash=False)
        self.started_ns = time.time_ns()
        self.warnings: list[str] = []
        self.kept: list[str] = []  # unreadable directories: entries below them stay
        self.memo = memo
        self.parse = parse  # read notes' tags and properties (some scope matches on them)
        self.listing = listing  # fill an empty index from names alone (`listed`)
        self.listed_at = listed_at  # when the index was listed (`tracker/listing.py`)
        self.sketches: dict[str, bytes] = {}

    def _skip(self, rel: str, is_dir: bool = False) -> bool:
        return is_internal(rel) or self.rules.ignored(rel, is_dir)

    def walk(self, top: bytes = b"") -> Iterator[tuple[bytes, os.stat_result]]:
        """Every file and link at or below `top`, with its lstat; directories pruned.

        Paths are raw bytes (the index's `encode_path` form): a rescan compares them with
        the index as they are and decodes only what changed.
        """
        for rel, e in self.names(top):
            try:
                yield rel, e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue

    def names(self, top: bytes = b"") -> Iterator[tuple[bytes, os.DirEntry[bytes]]]:
        """Every file and link at or below `top` as its folder lists it (no lstat)."""
        # Relative paths are built by joining names: os.path.relpath per file costs more
        # than the lstat itself.
        stack = [top]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(os.path.join(self.broot, rel_dir)) as it:
                    entries = list(it)
            except FileNotFoundError:
                continue
            except OSError as exc:
                shown = decode_path(rel_dir)
                self.warnings.append(f"{shown}: cannot list directory ({exc.strerror})")
                self.kept.append(shown)
                continue
            prefix = rel_dir + b"/" if rel_dir else b""
            # The directories above were checked before being walked: where no ignore rule
            # reaches, only internal names (a nested `.git`, `.freshline`, freshline.toml)
            # below the root can be internal.
            checks = self._checks_in(rel_dir, entries)
            for e in entries:
                name = e.name
                rel = prefix + name
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                    check = checks.folders if is_dir else checks.files
                    if (check or name in _INTERNAL) and self._skip_entry(rel, is_dir):
                        continue
                    if is_dir:
                        stack.append(rel)
                    elif e.is_file(follow_symlinks=False) or e.is_symlink():
                        yield rel, e
                except FileNotFoundError:
                    continue

    def _checks_in(self, rel_dir: bytes, entries: list[os.DirEntry[bytes]]) -> Checks:
        if not rel_dir:
            return Checks(True, True)  # freshline's own files lie at the root
        has_gitignore = any(e.name == b".gitignore" for e in entries)
        return self.rules.checks_in(decode_path(rel_dir), has_gitignore)

    def _skip_entry(self, raw: bytes, is_dir: bool) -> bool:
        rel = decode_path(raw)
        return is_internal(rel) or self.rules.ignored_entry(rel, is_dir)

    def stat_at(self, rel: str) -> Iterator[tuple[bytes, os.stat_result]]:
        """The file at `rel`, or everything below it if it is a directory."""
        raw = encode_path(rel)
        try:
            st = os.lstat(os.path.join(self.broot, raw))
        except OSError:
            return
        if self._skip(rel, stat.S_ISDIR(st.st_mode)):
            return
        if stat.S_ISDIR(st.st_mode):
            yield from self.walk(raw)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            yield raw, st

    def entry(self, rel: str, st: os.stat_result, defer: bool = False) -> IndexEntry | None:
        """A fresh index entry (hashing the file), or None with a warning if unreadable.

        A text file's line sketch is kept in `sketches`. With `defer`, only a file whose
        stat cannot be trusted (a link, a racily clean file) is read."""
        if defer and stat.S_ISREG(st.st_mode) and not self._racy(st):
            return listed_entry(rel, st)
        known = self.memo.get(rel) if self.memo is not None else None
        # A first pass that left notes unparsed is no use to a redo that parses them.
        if known is not None and _same_stat(known[0], st) and (known[1].parsed or not self.parse):
            _, entry, lines = known
        else:
            found = self._hash(rel, st)
            if found is None:
                return None
            entry, lines = found
            if self.memo is not None:
                self.memo[rel] = (st, entry, lines)
        if lines is not None:
            self.sketches[rel] = lines
        return entry

    def _hash(self, rel: str, st: os.stat_result) -> tuple[IndexEntry, bytes | None] | None:
        full = f"{self.root}/{rel}"
        tags: tuple[str, ...] = ()
        props: dict[str, object] = {}
        parsed = True
        lines = None
        try:
            if stat.S_ISLNK(st.st_mode):
                kind, blob = FileKind.LINK, blob_id_link(full)
            else:
                kind = FileKind.FILE
                blob, head = blob_id_file(full, st.st_size)
                if len(head) == st.st_size <= TEXT_CAP:  # the whole file was read
                    lines = sketch(head)
                # Parsing is most of a scan's work: skipped while no scope looks at tags.
                if is_markdown(rel) and not self.parse:
                    parsed = False
                elif is_markdown(rel):
                    note = parse_note(head)
                    tags, props = tuple(sorted(note.tags)), dict(note.properties)
        except FileNotFoundError:
            self.warnings.append(f"{rel}: vanished while being scanned")
            return None
        except OSError as exc:
            self.warnings.append(f"{rel}: cannot read ({exc.strerror or exc})")
            return None
        return IndexEntry(
            path=rel,
            kind=kind,
            size=st.st_size,
            mtime_ns=0 if self._racy(st) else st.st_mtime_ns,
            inode=st.st_ino,
            dev=st.st_dev,
            blob=blob,
            mode=git_mode(st),
            tags=tags,
            properties=props,
            parsed=parsed,
        ), lines

    def _racy(self, st: os.stat_result) -> bool:
        return st.st_mtime_ns >= self.started_ns - RACY_WINDOW_NS

    def _untouched(self, st: os.stat_result) -> bool:
        """Whether nothing changed the file since the index was listed."""
        return st.st_ctime_ns < self.listed_at

    def _as_listed(self, listed: tuple[int, int, int] | None, st: os.stat_result) -> bool:
        """Whether a file listed, never read, still holds the bytes it held when listed:
        its stat as listed, or (listed by name alone) untouched since."""
        if listed is None:
            return False
        if unstated(listed):
            return self._untouched(st)
        return listed == (st.st_size, st.st_mtime_ns, st.st_ino)

    def listed(self, listed_at: int) -> ScanResult:
        """An empty index filled from the folders' listings (`tracker/listing.py`), begun
        at `listed_at` by the file system's clock: every regular file by its name and
        inode, unread; a link (rare) read at once."""
        result = ScanResult(from_empty=True, listed_at=listed_at)
        dev = os.stat(self.broot).st_dev
        for raw, e in self.names():
            rel = decode_path(raw)
            try:
                regular = e.is_file(follow_symlinks=False)
                fresh = (unstated_entry(rel, e.inode(), dev) if regular
                         else self.entry(rel, e.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue
            if fresh is not None:
                result.put.append(fresh)
        if self.store.project_states():  # else every project is new: none logs the batch
            result.observed = [Observed(ChangeKind.CREATED, None, e) for e in result.put]
        result.sketches = self.sketches
        result.warnings = self.warnings
        result.scanned = len(result.put)
        result.ignore = self.rules.state()
        return result

    def _hidden(self, raw: bytes, rel: str) -> bool:
        """Whether a file the index had is still there, only ignored now: it left the
        projects (the scope change logs why), it was not deleted."""
        return self._skip(rel) and os.path.lexists(os.path.join(self.broot, raw))

    def _kept(self, rel: str) -> bool:
        return any(rel == k or rel.startswith(k + "/") for k in self.kept)

    def compare(
        self,
        disk: Iterable[tuple[bytes, os.stat_result]],
        stats: Stats,
        old_entry: Callable[[str], IndexEntry | None],
        listed: Mapping[bytes, tuple[int, int, int]] | None = None,
    ) -> ScanResult:
        """Compare what is on disk with the index's `stats` for the same region.

        `stats` is consumed: what is left of it once the disk is walked was deleted.
        `listed` are the entries never read that this scan reads (their stat as listed);
        their paths in `stats` hold a stat no file has. An entry never read whose file
        changed since it was listed was modified (`tracker/listing.py`); one listed by
        name alone that this scan does not read gets its stat, unless its file changed.
        """
        listed = listed or {}
        result = ScanResult()
        created: dict[str, IndexEntry] = {}
        scanned = 0
        for raw, st in disk:
            scanned += 1
            now = (st.st_size, st.st_mtime_ns, st.st_ino)
            known = stats.pop(raw, None)
            if known == now:
                continue
            rel = decode_path(raw)
            as_listed = known is not None and unstated(known) and raw not in listed
            if as_listed and self._untouched(st):  # its stat at last, read if it must be
                fresh = self.entry(rel, st, defer=True)
                if fresh is not None:
                    result.put.append(fresh)
                continue
            fresh = self.entry(rel, st)
            if fresh is None:
                if raw in listed:  # never read, and unreadable: as a first scan left it
                    result.remove.append(rel)
                continue
            result.put.append(fresh)
            if known is None:
                created[rel] = fresh
            elif not self._as_listed(listed.get(raw), st):  # else read at last, as listed
                old = old_entry(rel)
                if old is not None and (not old.hashed or content_of(old) != content_of(fresh)):
                    result.observed.append(Observed(ChangeKind.MODIFIED, old, fresh))
        deleted: dict[str, IndexEntry] = {}
        for raw in stats:
            rel = decode_path(raw)
            old, kept = old_entry(rel), self._kept(rel)
            if old is None or (kept and raw not in listed):
                continue  # below a folder that cannot be listed: kept as it was
            if not kept and not self._hidden(raw, rel):
                deleted[rel] = old
            result.remove.append(rel)  # (a listed one below such a folder: never read)
        self._pair(result, deleted, created)
        result.sketches = self.sketches
        result.warnings = self.warnings
        result.scanned = scanned
        return result

    def _pair(
        self, result: ScanResult, deleted: dict[str, IndexEntry], created: dict[str, IndexEntry]
    ) -> None:
        if not deleted or not created:  # a first scan: nothing to pair 100k creations with
            result.observed += [Observed(ChangeKind.DELETED, e, None) for e in deleted.values()]
            result.observed += [Observed(ChangeKind.CREATED, None, e) for e in created.values()]
            return
        deleted = twin_blobs(deleted, created)  # a listed file moved: read as its twin
        renames, rest = pair_renames(deleted, created, self.store.index_sketches, self.text)
        result.observed += renames + rest
        result.folders = [
            f
            for f in folder_renames(renames, self._count_under)
            if not os.path.isdir(os.path.join(self.root, f.old))  # emptied, not moved
        ]

    def text(self, rel: str) -> bytes | None:
        """A created file's bytes, if it is a text file small enough to compare (it has a
        line sketch), else None."""
        if rel not in self.sketches:
            return None
        try:
            with open_beneath(Path(self.root), rel, follow=False) as opened:
                return opened.read(TEXT_CAP + 1) if opened.kind is Kind.FILE else None
        except (OSError, WorkspaceError):
            return None

    def _count_under(self, folder: str) -> int:
        return len(self.store.index_under([folder])) if folder else self.store.index_count()


def _same_stat(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns, a.st_ino, a.st_ctime_ns) == (
        b.st_size, b.st_mtime_ns, b.st_ino, b.st_ctime_ns
    )


def full_scan(
    scanner: Scanner, reparse: Iterable[bytes] = (), listed: Stats | None = None
) -> ScanResult:
    """Compare the whole workspace with the whole index; the files at the stored paths
    `reparse` are read again whatever their stat (notes stored unparsed that a scope now
    needs the tags of), and so are the `listed` ones (never read: path → stat listed).
    A listing scan lists instead, if it can read the file system's clock."""
    listed_at = fs_clock(scanner.root) if scanner.listing else None
    if listed_at is not None:
        return scanner.listed(listed_at)
    stats = scanner.store.index_stats()
    empty = not stats
    for raw in chain(reparse, listed or ()):
        if raw in stats:
            stats[raw] = _UNKNOWN
    result = scanner.compare(scanner.walk(), stats, scanner.store.index_get, listed)
    result.from_empty = empty
    result.listed_read = listed is not None
    result.ignore = scanner.rules.state()  # the walk read every rule file that applies
    return result


def targeted_scan(scanner: Scanner, paths: Iterable[str]) -> ScanResult:
    """Compare only the hinted paths (and, for directories, their subtrees)."""
    roots = outermost(p for p in paths if not is_internal(p))
    region = scanner.store.index_under(roots)
    stats = {encode_path(p): (e.size, e.mtime_ns, e.inode) for p, e in region.items()}
    disk = (item for rel in roots for item in scanner.stat_at(rel))
    return scanner.compare(disk, stats, region.get)


def outermost(paths: Iterable[str]) -> list[str]:
    """The paths not below another one of them (so no subtree is walked twice), sorted.
    Each path's folders are looked up among those kept: a burst of hints (a checkout's
    thousands) costs their number times their depth, not its square."""
    kept: set[str] = set()
    for p in sorted(set(paths)):  # a folder sorts before everything below it
        folders = accumulate(p.split("/")[:-1], lambda a, b: f"{a}/{b}")
        if not any(f in kept for f in folders):
            kept.add(p)
    return sorted(kept)
