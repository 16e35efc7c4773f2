"""The updates block: what changed in a project since the session's cursor.

Wire format (wire-only: the model sees it, the visible transcript does not)::

    <project_context_updates project="research" from_epoch="3" to_epoch="5">
    Files you read or wrote that changed since (read them again before relying on them):
    - you read /home/u/vault/plan.md at turn 3; it has changed since (outside freshline)
    - you wrote /home/u/vault/b.md at turn 4; it was deleted since (by git pull (a1b2c3d → e4f5a6b))
    Changes to the project since your last turn: paths only, never contents. Re-read ...
    This conversation was closed for a while: the project may have changed ...  (resumed)
    The change log no longer reaches your last turn, ... the manifest ...       (forgotten)
    Earlier changes, counted per folder (the change log no longer lists them ...):
    - /home/u/vault/Bulk/sub03/: 100 created (epochs 5–9)
    - HEAD moved 1a2b3c4 → 5d6e7f8 by checkout (epoch 7): 1,204 paths in this project, ...
    Scope changed:
    - now included: tag #paper
    - no longer included: file type *.txt
    - no longer excluded: folder /home/u/vault/Drafts/
    - mode: live → isolated
    Refreshed from main (1a2b3c4 → 5d6e7f8); paths it changed:
    - /home/u/vault/src/app.py
    Conflicts left by the refresh from main (resolve them before relying on these files):
    - /home/u/vault/src/db.py (content: remove the conflict markers)
    - /home/u/vault/CHANGES.rst (modify/delete: no conflict markers; delete it, or ...)
    HEAD moved a1b2c3d → e4f5a6b by checkout: 1,204 paths in this project, listed below.
    Created:
    - /home/u/vault/new.md
    - /home/u/vault/c.md (by freshline session 3f2a9c1b0d4e, claude-code)
    - /home/u/vault/b.pdf (converting: read the raw file for now; the snapshot follows ...)
    Modified:
    - /home/u/vault/a.pdf (converted: read the snapshot /home/u/vault/.freshline/...)
    Deleted:
    - /home/u/vault/c.pdf (the old snapshot /home/u/... is invalid; do not cite it)
    Renamed:
    - /home/u/vault/Drafts/ → /home/u/vault/Ideas/ (a folder moved as a whole, 1 file)
    - /home/u/vault/Drafts/a.md → /home/u/vault/Ideas/a.md
    - /home/u/vault/old.md → /home/u/vault/new name.md
    Entered the project:
    - /home/u/vault/Drafts/idea.md (now included by folder /home/u/vault/Drafts/)
    Left the project (the files are still there):
    - /home/u/vault/Version history.md (now tagged #personal)
    Changes grouped by folder (counts by kind):                     (rolled up)
    - /home/u/vault/notes/2024/: 312 created, 4 deleted
    Snapshots ready since an earlier turn (read these instead of the raw files):
    - /home/u/vault/b.pdf → /home/u/vault/.freshline/snapshots/b.md
    Documents that failed to convert:
    - /home/u/vault/d.pdf (conversion failed: encrypted)
    Snapshots no longer valid (do not cite them):
    - /home/u/vault/.freshline/snapshots/e.md (was the snapshot of /home/u/vault/e.pdf)
    Some changes above are grouped, not listed one by one: run `freshline changes ...`
    </project_context_updates>

The first section lists files the agent read (or its tool wrote) whose content changed
since (`UpdatesInput.stale`, from the session's read ledger), each with the turn and who
changed it, as proven (`Source`): another session, a git operation, a refresh, or
"outside freshline". Its entries are kept listed until nothing else can fold. A change
another session's tool wrote carries that session (`UpdatesInput.writers`).
A file renamed and edited is one entry, on its rename's line (`its content changed too`):
a block names each path under one kind. A file that crossed the scope's edge where it
stands (its tags or properties changed, or the config did), was hidden by an ignore rule
or was moved out entered or left the project, with the reason when the tracker knew it
(`phrases.reason`; a file moved out never says where it went). Changes older than the
log's start come counted per folder with their epochs (`UpdatesInput.folded`), and fold
further like other path changes. A document among the changes carries its state in
parentheses (`UpdatesInput.documents`, looked up by path; a rename also looks up its old
path, whose snapshot is then invalid).
A log that no longer reaches back even as counts (`compacted`: the manifest comes with
the block) replaces every log-derived section (counts, scope, refresh, path changes) with
one line; a rewind, not from the log, is still told, and so are the document sections,
which come from the session's own sets. Entries are sorted and deduplicated; scope
changes, refreshes and git operations keep their order.
`updates_plan` describes the block for `fit.render_blocks`, which rolls it up to a budget
(`rollup.py`): the paths of a git operation are then counted in its line, and other
entries in groups per folder, with a last line naming the way to the full list.
`render_updates` (no budget) lists everything, and returns None when there is nothing to say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from freshline.materialize.status import DocStatus
from freshline.store.records import Change, ChangeKind

from . import phrases
from .budget import Budget
from .layout import (
    Entry,
    GitLine,
    GitWriter,
    Groups,
    Part,
    Plan,
    Pool,
    Section,
    Text,
    WayBack,
)
from .model import (
    ConfigChange,
    DocumentInfo,
    GitOperation,
    Refresh,
    Rewound,
    Source,
    UpdatesInput,
)
from .wire import ARROW, count, short_commit, show, show_text

_GROUPS = (
    (ChangeKind.CREATED, "Created:"),
    (ChangeKind.MODIFIED, "Modified:"),
    (ChangeKind.DELETED, "Deleted:"),
    (ChangeKind.RENAMED, "Renamed:"),
    (ChangeKind.ENTERED, phrases.ENTERED_HEADING),
    (ChangeKind.LEFT, phrases.LEFT_HEADING),
)
_LABELS = {ChangeKind.ENTERED: "entered the project", ChangeKind.LEFT: "left the project"}
_PATTERN_LABELS = {
    "include_added": "now included",
    "include_removed": "no longer included",
    "exclude_added": "now excluded",
    "exclude_removed": "no longer excluded",
    "ignore_added": "now ignored in the whole workspace",
    "ignore_removed": "no longer ignored in the whole workspace",
}


class _Builder:
    """One block's plan in the making: the input, its documents by path, the priority."""

    def __init__(self, u: UpdatesInput, priority: Collection[str]) -> None:
        self.u = u
        self.priority = frozenset(priority)
        # sorted: a path given twice is told the same way whatever the input's order
        self.docs: Mapping[str, DocumentInfo] = {d.path: d for d in sorted(
            u.documents, key=lambda d: (d.path, d.state.value, d.snapshot or "", d.reason or ""))}
        self.writers: Mapping[str, Source] = dict(u.writers)
        renamed = {c.path for c in u.changes
                   if c.kind is ChangeKind.RENAMED and not _is_folder(c)}
        # renamed and edited: one entry, on the rename's line
        self.edited = {c.path for c in u.changes if c.kind is ChangeKind.MODIFIED} & renamed

    def entry(
        self, path: str, label: str, text: str | None = None, key: str = "",
        needed: bool = False, ops: tuple[int, ...] = (), rename: int | None = None,
    ) -> Entry:
        """An entry the roll-up may fold; what the agent needs most goes to the kept pool."""
        kept = needed or path in self.priority
        pool = Pool.KEPT if kept else Pool.CHANGES
        shown = text if text is not None else self.shown(path)
        return Entry(path, shown, label, pool, key, ops=ops, rename=rename)

    def shown(self, path: str) -> str:
        """A path in the project, with its document state if it is a document, and the
        session that wrote it if another one did."""
        doc = self.docs.get(path)
        note = phrases.state_note(self.u.root, doc) if doc else None
        return phrases.annotated(show(self.u.root, path), [note, self.writer(path)])

    def writer(self, path: str) -> str | None:
        """`by freshline session …` when another session's tool wrote the path."""
        source = self.writers.get(path)
        return phrases.source_note(source) if source else None

    def gone(self, path: str) -> str | None:
        """The invalid-snapshot warning for a path that left, if it had a snapshot."""
        doc = self.docs.get(path)
        return phrases.invalid(self.u.root, doc.snapshot) if doc and doc.snapshot else None

    def needed(self, *paths: str | None) -> bool:
        """Whether the agent must hear about one of these paths one by one: a priority
        path, a document that failed, or a document whose old snapshot is now invalid."""
        for path in filter(None, paths):
            doc = self.docs.get(path)
            failed = doc is not None and doc.state is DocStatus.FAILED
            if path in self.priority or failed or self.gone(path):
                return True
        return False

    def group_line(self, folder: str, counts: Counter[str]) -> str:
        """A folder group of this block."""
        return phrases.group(self.u.root, folder, counts, phrases.CHANGE_LABELS)


def updates_plan(
    u: UpdatesInput, budget: Budget | None = None, priority: Collection[str] = ()
) -> Plan | None:
    """The block's plan (`layout.py`), or None when there is nothing to say. Paths in
    `priority` stay listed until everything else is folded. `budget` names the channel,
    whose way to the full list ends a rolled-up block."""
    b = _Builder(u, priority)
    stale = Section(phrases.STALE_HEADING, [
        b.entry(r.path, phrases.STALE_LABEL, phrases.stale_line(u.root, r), needed=True)
        for r in u.stale
    ])
    parts: list[Part] = []
    if u.resumed:
        parts.append(Text(phrases.RESUMED, essential=True))
    for rewound in u.rewound:  # not from the change log: told even when it was compacted
        parts += _rewound(b, rewound)
    if u.compacted:
        parts.append(Text(phrases.FORGOTTEN, essential=True))
    else:
        parts.append(_folded(b))
        for config in u.config:
            parts += _config(b, config)
        for refresh in u.refreshed:
            parts += _refresh(b, refresh)
        parts += [GitLine(i, _git_writer(op)) for i, op in enumerate(u.git)]
        parts += [Text(phrases.upgraded(up), essential=True) for up in u.upgraded]
        parts += _changes(b, list(u.changes))
    parts += _documents(b)
    if not any(_says_something(part) for part in [stale, *parts]):
        return None
    parts = [stale, Text(phrases.UPDATES_INSTRUCTION, essential=True), *parts,
             Groups(phrases.CHANGES_GROUPED, (Pool.CHANGES, Pool.KEPT)),
             WayBack(phrases.changes_way_back(budget, u.project, u.from_epoch))]
    attributes = [("project", u.project), ("from_epoch", u.from_epoch), ("to_epoch", u.to_epoch),
                  *(budget.tagged() if budget else [])]
    return Plan("project_context_updates", attributes, parts, b.group_line,
                legend=phrases.READ_BACK)


def _says_something(part: Part) -> bool:
    return not isinstance(part, Section) or bool(part.entries) or part.sticky


def _git_writer(op: GitOperation) -> GitWriter:
    return lambda grouped, others: phrases.git_operation(op, grouped, others)


def _changes(b: _Builder, changes: list[Change]) -> list[Part]:
    ops = [frozenset(op.paths) for op in b.u.git]
    folders = [c for c in changes if c.kind is ChangeKind.RENAMED and _is_folder(c)]
    children = _folder_children(changes, folders)

    def holding(*paths: str | None) -> tuple[int, ...]:
        return tuple(i for i, op in enumerate(ops) if any(p in op for p in paths if p))

    def entry(c: Change) -> Entry:
        label = c.kind.value
        if c.kind is ChangeKind.RENAMED:
            return b.entry(c.path, label, _renamed(b, c), c.old_path or "",
                           b.needed(c.path, c.old_path), holding(c.path, c.old_path),
                           children.get(id(c)))
        text = _deleted(b, c) if c.kind is ChangeKind.DELETED else _crossed(b, c)
        return b.entry(c.path, _LABELS.get(c.kind, label), text, "", b.needed(c.path),
                       holding(c.path))

    sizes = Counter(children.values())
    lists: dict[ChangeKind, list[Entry]] = {kind: [] for kind, _ in _GROUPS}
    for c in changes:
        if c.kind is ChangeKind.MODIFIED and c.path in b.edited:
            continue  # its rename's line says so: a path is named under one kind
        if c.kind is ChangeKind.RENAMED and _is_folder(c):
            text = _folder_renamed(b, c, sizes[folders.index(c)])
            lists[c.kind].append(Entry(c.path, text, key=c.old_path or ""))
        else:
            lists[c.kind].append(entry(c))
    return [Section(heading, lists[kind]) for kind, heading in _GROUPS]


def _is_folder(change: Change) -> bool:
    # the tracker marks a folder moved as a whole once, beside an entry per file in it
    return bool((change.detail or {}).get("folder"))


def _folder_children(changes: Iterable[Change], folders: list[Change]) -> dict[int, int]:
    """The folder rename (its index in `folders`) that moved each renamed file, by id."""
    moved: dict[int, int] = {}
    for c in changes:
        if c.kind is not ChangeKind.RENAMED or _is_folder(c) or not c.old_path:
            continue
        for i, f in enumerate(folders):
            old, new = (f.old_path or "") + "/", f.path + "/"
            if c.old_path.startswith(old) and c.path == new + c.old_path[len(old):]:
                moved[id(c)] = i
                break
    return moved


def _deleted(b: _Builder, change: Change) -> str:
    path = change.path
    return phrases.annotated(show(b.u.root, path), [b.gone(path), b.writer(path)])


def _renamed(b: _Builder, change: Change) -> str:
    old = change.old_path or ""
    moved = f"{show(b.u.root, old)}{ARROW}{show(b.u.root, change.path)}"
    doc = b.docs.get(change.path)
    now = phrases.state_note(b.u.root, doc) if doc else None
    edited = phrases.EDITED_TOO if change.path in b.edited else None
    return phrases.annotated(moved, [edited, b.gone(old), now, b.writer(change.path)])


def _folder_renamed(b: _Builder, change: Change, moved: int) -> str:
    root = b.u.root
    old, new = phrases.folder(root, change.old_path or ""), phrases.folder(root, change.path)
    line = f"{old}{ARROW}{new}"
    files = f"{count(moved)} file{'' if moved == 1 else 's'}"
    return phrases.annotated(line, [f"a folder moved as a whole, {files}" if moved else None])


def _crossed(b: _Builder, change: Change) -> str | None:
    """An entry that entered or left the project, with why; None for other kinds."""
    if change.kind not in _LABELS:
        return None
    why = phrases.reason(b.u.root, change.path, change.detail)
    if change.kind is ChangeKind.LEFT:
        return phrases.annotated(show(b.u.root, change.path), [why, b.gone(change.path)])
    doc = b.docs.get(change.path)
    note = phrases.state_note(b.u.root, doc) if doc else None
    return phrases.annotated(show(b.u.root, change.path), [why, note, b.writer(change.path)])


def _folded(b: _Builder) -> Section:
    """The counts of earlier changes the log no longer lists: a line per folder (folding
    further with the other path changes), then each HEAD move and scope change."""
    root = b.u.root
    entries = [
        Entry(g.folder, phrases.annotated(
            phrases.group(root, g.folder, Counter(dict(_labelled(g.counts))),
                          phrases.CHANGE_LABELS),
            [phrases.epochs(g.first_epoch, g.last_epoch)]),
            pool=Pool.CHANGES, folded_at=g.folder, counts=tuple(sorted(_labelled(g.counts))))
        for g in b.u.folded if g.entry is None
    ]
    entries += [Entry("", phrases.folded_entry(g), key=f"\uffff{i:06}")
                for i, g in enumerate(b.u.folded) if g.entry is not None]
    return Section(phrases.FOLDED_HEADING, entries)


def _labelled(counts: Mapping[str, int]) -> Iterable[tuple[str, int]]:
    """Counts by change kind as a group line's labels."""
    for kind, n in counts.items():
        yield _LABELS.get(ChangeKind(kind), kind), n


def _config(b: _Builder, config: ConfigChange) -> list[Part]:
    root = b.u.root
    lines = [
        f"- {label}: {phrases.source(root, src)}"
        for name, label in _PATTERN_LABELS.items()
        for src in phrases.sorted_sources(getattr(config, name))
    ]
    if config.mode_from != config.mode_to:
        lines.append(f"- mode: {_mode(config.mode_from)}{ARROW}{_mode(config.mode_to)}")
    lines += [f"- ignore rules changed in {show(root, f)}" for f in config.ignore_files]
    # in this order (include before exclude), not sorted: it reads better
    heading = "Scope changed:" if lines else "Scope changed."
    return [Text(heading), *(Text(line) for line in lines)]


def _mode(mode: str | None) -> str:
    return show_text(mode) if mode else "unset"


def _refresh(b: _Builder, refresh: Refresh) -> list[Part]:
    target = phrases.refresh_target(refresh.target)
    span = f"{short_commit(refresh.from_commit)}{ARROW}{short_commit(refresh.to_commit)}"
    head = f"Refreshed from {target} ({span})"
    if not refresh.paths:
        changed: Part = Text(f"{head}; no paths in this project changed.")
    else:
        entries = [b.entry(p, "changed by a refresh") for p in refresh.paths]
        changed = Section(f"{head}; paths it changed:", entries, sticky=True)
    kinds = dict(refresh.conflict_kinds)
    conflicts = Section(
        f"Conflicts left by the refresh from {target} "
        "(resolve them before relying on these files):",
        [b.entry(p, "left in conflict", phrases.annotated(
            show(b.u.root, p), [phrases.conflict(kinds.get(p))]), needed=True)
         for p in refresh.conflicts],
    )
    return [changed, conflicts]


def _rewound(b: _Builder, rewound: Rewound) -> list[Part]:
    head = phrases.rewound(rewound)
    if not rewound.paths:
        return [Text(f"{head} {phrases.REWOUND_NOTHING}", essential=True)]
    entries = [b.entry(p, phrases.REWOUND_LABEL) for p in rewound.paths]
    return [Section(f"{head} {phrases.REWOUND_PATHS}", entries, sticky=True)]


def _documents(b: _Builder) -> list[Part]:
    root = b.u.root
    return [
        Section("Snapshots ready since an earlier turn (read these instead of the raw files):",
             [b.entry(d.path, "with a snapshot now ready", phrases.pointer(root, d), needed=True)
              for d in b.u.ready_documents]),
        Section("Documents that failed to convert:",
             [b.entry(d.path, "failed to convert",
                      phrases.annotated(show(root, d.path), [phrases.failure(d)]), needed=True)
              for d in b.u.failed_documents]),
        Section("Snapshots no longer valid (do not cite them):",
             [b.entry(path, "with an invalid old snapshot",
                      f"{show(root, snap)} (was the snapshot of {show(root, path)})", needed=True)
              for path, snap in b.u.invalid_snapshots]),
    ]
