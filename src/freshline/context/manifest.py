"""The manifest block: what a project is, sent on a session's first turn and on resume.

Wire format (wire-only: the model sees it, the visible transcript does not)::

    <project_context project="research" workspace="/home/u/vault" epoch="12" mode="live">
    Paths are absolute. Read files with your tools; for a converted document read ...
    This conversation was closed for a while: the project may have changed ...   (resumed)
    Sources:
    - folder /home/u/vault/Research/Papers/
    - glob /home/u/vault/notes/**/*.md
    - file type *.pdf
    - tag #paper
    - note [[Reading List]]
    - property [status:active]
    Excluded:
    - folder /home/u/vault/Research/Papers/old/
    Converted documents (source → snapshot):
    - /home/u/vault/a.pdf → /home/u/vault/.freshline/snapshots/a.md
    Documents still converting (read the raw file for now; the snapshot follows later):
    - /home/u/vault/b.pdf
    - /home/u/vault/c.pdf (older snapshot, may be out of date: /home/u/vault/.freshline/...)
    Failed documents:
    - /home/u/vault/d.pdf (conversion failed: encrypted)
    Documents grouped by folder (counts by status):                   (rolled up)
    - /home/u/vault/papers/: 120 converted, 50 converting, 30 failed
    Files (314):
    - /home/u/vault/Research/Papers/a.pdf
    - /home/u/vault/notes/: 312 files
    - /home/u/vault/notes/x.md
    Some files or documents above are counted per folder, not listed one by one: ...
    </project_context>

Sections appear in this order and only when non-empty. Sources are listed, never expanded.
Under a budget (`fit.render_blocks`) files are listed one per line while they fit, folders
whole: only as many folders are counted (deepest first, `rollup.py`) as the budget needs,
then documents fold into folder groups too, and the block ends with the way to list them
all. Without a budget files are listed up to `list_files_max` lines. Entries are sorted and
deduplicated; sources sort by kind, then pattern. Deleted documents are not part of a
project and are not shown. A session stores its manifest in the compact form of
`compact_manifest` (files past its channel's budget already counted per folder), which
renders the same block.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from itertools import chain

from freshline.materialize.status import DocStatus
from freshline.scope import Pattern, PatternKind

from . import phrases
from .budget import Budget
from .layout import Entry, Folds, Groups, Part, Plan, Pool, Section, Text, TopFolded, WayBack
from .model import DocumentInfo, FileGroup, ManifestInput
from .rollup import GROUP_CHARS, folder_order, lines_of
from .wire import count, show, shown_lengths

_CONVERTING = (DocStatus.PENDING, DocStatus.STALE)
STORED_CHARS = 100_000  # a stored manifest lists files up to this many characters


def manifest_plan(m: ManifestInput, budget: Budget | None = None) -> Plan:
    """The `<project_context>` block's plan (`layout.py`); `budget` names the channel,
    whose way to every file and document ends a rolled-up block.

    Under a budget the roll-up folds only what it must; the files whose lines alone would
    take more than the budget are counted per folder first (the roll-up folds them first
    anyway, and fitting a short list renders fast). Without a budget, files past
    `list_files_max` lines are counted per folder."""
    if budget is None:
        plan = _plan(m, None)
        plan.start = _start(plan, m.list_files_max)
        return plan
    plan = _plan(compact_manifest(m, budget.chars), budget)
    plan.start = _start(plan)
    return plan


def _plan(m: ManifestInput, budget: Budget | None) -> Plan:
    parts: list[Part] = [Text(phrases.MANIFEST_INSTRUCTION, essential=True)]
    if m.forked:
        parts.append(Text(phrases.forked(m.forked), essential=True))
    elif m.resumed:
        parts.append(Text(phrases.RESUMED, essential=True))
    if not m.include:
        parts.append(Text("Sources: none (this project includes nothing yet).", essential=True))
    parts += [*_sources(m), *_documents(m), *_files(m)]
    parts.append(WayBack(phrases.files_way_back(budget, m.project)))
    attributes = [("project", m.project), ("workspace", m.root), ("epoch", m.epoch),
                  ("mode", m.mode), *(budget.tagged() if budget else [])]

    def group_line(folder: str, counts: Counter[str]) -> str:
        return phrases.group(m.root, folder, counts, phrases.DOCUMENT_LABELS)

    return Plan("project_context", attributes, parts, group_line, legend=phrases.READ_BACK)


def _sources(m: ManifestInput) -> list[Part]:
    known = frozenset(m.files or ()) | frozenset(m.pattern_files)

    def listed(patterns: Iterable[Pattern]) -> list[Entry]:
        return [Entry("", phrases.source(m.root, p, known), key=f"{i:06}")
                for i, p in enumerate(phrases.sorted_sources(patterns))]

    return [Section("Sources:", listed(m.include)), Section("Excluded:", listed(m.exclude))]


def _documents(m: ManifestInput) -> list[Part]:
    docs = sorted(set(m.documents), key=_doc_key)

    def entry(d: DocumentInfo, label: str, text: str) -> Entry:
        return Entry(d.path, text, label, Pool.DOCUMENTS)

    return [
        Section("Converted documents (source → snapshot):",
             [entry(d, "converted", phrases.pointer(m.root, d))
              for d in docs if d.state is DocStatus.READY]),
        Section("Documents still converting (read the raw file for now; "
             "the snapshot follows on a later turn):",
             [entry(d, "converting", _converting(m.root, d))
              for d in docs if d.state in _CONVERTING]),
        Section("Failed documents:",
             [entry(d, "failed",
                    phrases.annotated(show(m.root, d.path), [phrases.failure(d)]))
              for d in docs if d.state is DocStatus.FAILED]),
        Groups(phrases.DOCUMENTS_GROUPED, (Pool.DOCUMENTS,)),
    ]


def _doc_key(doc: DocumentInfo) -> tuple[str, str, str, str]:
    return (doc.path, doc.state.value, doc.snapshot or "", doc.reason or "")


def _converting(root: str, doc: DocumentInfo) -> str:
    older = doc.snapshot if doc.state is DocStatus.STALE else None
    note = f"older snapshot, may be out of date: {show(root, older)}" if older else None
    return phrases.annotated(show(root, doc.path), [note])


def _files(m: ManifestInput) -> list[Part]:
    if m.files is None and not m.file_groups:
        return []
    files = sorted(set(m.files or ()))
    total = len(files) + sum(g.count for g in m.file_groups)
    if not total:
        return [Text("Files: none in scope yet.")]
    entries = [Entry(f, show(m.root, f), phrases.FILES, Pool.FILES) for f in files]
    entries += [Entry(g.folder, "", phrases.FILES, Pool.FILES, count=g.count, folded_at=g.folder)
                for g in m.file_groups]
    return [Section(f"Files ({count(total)}):", entries, groups=Pool.FILES)]


def _start(plan: Plan, most: int | None = None, chars: int | None = None) -> Folds:
    """The folds a manifest always has: its stored file groups, then folders, deepest
    first, until the files take at most `most` lines (and `chars` characters)."""
    files = [e for e in plan.entries() if e.pool is Pool.FILES]
    start = Folds()
    folded = start.folded(Pool.FILES)
    folded.update(e.folded_at for e in files if e.folded_at is not None)
    lines, size = len(files), sum(_size(e) for e in files)
    order = folder_order(lines_of(files), folded) if most is not None or chars is not None else []
    for folder, taken, saved in order:
        if (most is None or lines <= most) and (chars is None or size <= chars):
            break
        folded.add(folder)
        lines -= taken - 1
        size -= saved
    return start


def _size(entry: Entry) -> int:
    """About the characters an entry's line takes (a stored group's: its group line)."""
    if entry.folded_at is not None:
        return len(entry.folded_at) + GROUP_CHARS
    return len(entry.text) + 3


def compact_manifest(m: ManifestInput, chars: int = STORED_CHARS) -> ManifestInput:
    """`m` with files listed up to `chars` characters (by default `STORED_CHARS`, more
    than any channel's default budget) and the rest counted per folder, deepest first, as
    the roll-up would: the same block from a record that stays bounded however many files
    the project has, from which every channel rolls up only as far as its budget needs.

    It folds as `_start(plan, None, chars)` and places as `Placement` would, from the
    paths alone: a workspace's first manifest compacts tens of thousands of files, and
    a plan's entry per file costs more than the rest of the answer."""
    if m.files is None:
        return m
    files = sorted(set(m.files))
    sizes = [n + 3 for n in shown_lengths(m.root, files)]
    folders = [f.rpartition("/")[0] for f in files]
    groups = [(g.folder, len(g.folder) + GROUP_CHARS) for g in m.file_groups]
    folded = {g.folder for g in m.file_groups}
    size = sum(sizes) + sum(chars_ for _, chars_ in groups)
    lines = chain(zip(folders, sizes, strict=True), ((folder, 3) for folder, _ in groups))
    for folder, _, saved in folder_order(lines, folded):
        if size <= chars:
            break
        folded.add(folder)
        size -= saved
    top = TopFolded(folded)
    listed: list[str] = []
    counted: Counter[str] = Counter()
    last, above = None, None
    for path, folder in zip(files, folders, strict=True):
        if folder != last:  # sorted: a folder's files come one after another
            last, above = folder, top(folder)
        if above is None:
            listed.append(path)
        else:
            counted[above] += 1
    for g in m.file_groups:  # each in its folder's group, or in one above it
        counted[top(g.folder) or g.folder] += g.count
    known = set(m.files)
    named = tuple(sorted(set(m.pattern_files) | {
        p.value for p in (*m.include, *m.exclude)
        if p.kind is PatternKind.FOLDER and p.value in known}))
    return replace(m, files=tuple(listed), pattern_files=named,
                   file_groups=tuple(FileGroup(f, n) for f, n in sorted(counted.items())))
