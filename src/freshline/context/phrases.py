"""The sentences the model reads, in one place so the wording can be reviewed as a whole."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from freshline.materialize.status import DocStatus, Upgrade
from freshline.names import escape
from freshline.refs import short_ref
from freshline.scope import Pattern, PatternKind
from freshline.store.records import ChangeGroup, ChangeKind
from freshline.tracker.reasons import reason_text

from .budget import Budget, Channel
from .model import DocumentInfo, GitOperation, Rewound, Source, SourceKind, StaleRead
from .wire import ARROW, absolute, count, short_commit, show, show_path, show_text

MANIFEST_INSTRUCTION = (
    "Paths are absolute. Read files with your tools; for a converted document read its "
    "snapshot, not the raw file. Later turns may begin with a <project_context_updates> "
    "block naming what changed."
)
UPDATES_INSTRUCTION = (
    "Changes to the project since your last turn: paths only, never contents. Re-read a "
    "file before relying on what you read earlier."
)
RESUMED = (
    "This conversation was closed for a while: the project may have changed in the meantime."
)


def forked(origin: str) -> str:
    """The manifest's line for a fork's first turn: `origin` names the conversation it
    continues and where ("session 3f2a9c1b7d4e, where its turn 3 began")."""
    return (f"This conversation is a fork of {origin}: the history before that point is "
            "shared; the project may have changed since.")
FORGOTTEN = (
    "The change log no longer reaches your last turn, so what changed since cannot be "
    "listed: the project as it is now is in the manifest delivered with this block. "
    "Re-read a file before relying on what you read earlier."
)
FOLDED_HEADING = (
    "Earlier changes, counted per folder (the change log no longer lists them one by one; "
    "each count says the epochs it spans, and may include changes you were told before):"
)
READ_BACK = (
    "Names are shown as they are on disk, but for backslash escapes of what could break "
    "this block: \\\\ is a backslash, \\n a newline, \\xff a byte that is not UTF-8, "
    "\\u202e an invisible character, \\x3c a <. freshline's tools take a name as shown; "
    "a shell reads it back written as $'…' (single quotes as \\')."
)
LEFT_HEADING = "Left the project (the files are still there):"
EDITED_TOO = "its content changed too"
ENTERED_HEADING = "Entered the project:"
STALE_HEADING = (
    "Files you read or wrote that changed since (read them again before relying on them):"
)
STALE_LABEL = "read by you and changed since"
IN_PROGRESS = "converting: read the raw file for now; the snapshot follows on a later turn"
CHANGES_GROUPED = "Changes grouped by folder (counts by kind):"
DOCUMENTS_GROUPED = "Documents grouped by folder (counts by status):"
# what a group counts an entry as, in the order a group line names them
CHANGE_LABELS = (
    "created", "modified", "deleted", "renamed", "entered the project", "left the project",
    "changed by a refresh",
    "left with conflict markers", "with a snapshot now ready", "failed to convert",
    "with an invalid old snapshot", STALE_LABEL, "changed by a rewind",
)
REWOUND_LABEL = CHANGE_LABELS[-1]
REWOUND_PATHS = "Paths that differ from what you last saw (read them again):"
REWOUND_NOTHING = "No path in this project differs from what you last saw."
DOCUMENT_LABELS = ("converted", "converting", "failed")
FILES = "files"
_SINGULAR = {FILES: "file"}
_BUILT_IN = (Channel.CHAT, Channel.SEND)  # channels whose agent has freshline's own tools
# Channels whose agent calls freshline's MCP tools: an MCP client's own, and the agent the
# ACP proxy starts (given freshline's MCP server with each session), whose tools sit
# among others' and so are named as freshline's.
_MCP_TOOLS = {Channel.MCP: "", Channel.ACP: "freshline's "}
_KIND_ORDER = {kind: i for i, kind in enumerate(PatternKind)}
_LABELS = {PatternKind.EXTENSION: "file type"}


def sorted_sources(sources: Iterable[Pattern]) -> list[Pattern]:
    """Patterns without duplicates, in kind order (as PatternKind lists them), then by text."""
    unique = {(p.kind, p.text): p for p in sources}
    return [unique[key] for key in sorted(unique, key=lambda k: (_KIND_ORDER[k[0]], k[1]))]


def source(root: str, pattern: Pattern, files: frozenset[str] = frozenset()) -> str:
    """A pattern as a source line: folders and globs absolute, other kinds as written.

    A folder pattern that names one of `files` is a single file, and shown as one.
    """
    if pattern.kind is PatternKind.FOLDER and pattern.value in files:
        return f"file {show(root, pattern.value)}"
    if pattern.kind is PatternKind.FOLDER:
        return f"folder {folder(root, pattern.value)}"
    if pattern.kind is PatternKind.GLOB:
        return f"glob {show(root, pattern.value)}"
    label = _LABELS.get(pattern.kind, pattern.kind.value)
    return f"{label} {show_text(pattern.text)}"


def folder(root: str, path: str) -> str:
    """A folder as shown: absolute, with a trailing slash."""
    return show_path(absolute(root, path).rstrip("/") + "/")


def failure(doc: DocumentInfo) -> str:
    """`conversion failed`, with the reason when there is one."""
    return f"conversion failed: {show_text(doc.reason)}" if doc.reason else "conversion failed"


def invalid(root: str, snapshot: str) -> str:
    """The warning for a snapshot whose source is gone or moved."""
    return f"the old snapshot {show(root, snapshot)} is invalid; do not cite it"


def state_note(root: str, doc: DocumentInfo) -> str | None:
    """What the model should do with a document that is (still) in the project."""
    if doc.state is DocStatus.READY:
        return f"converted: read the snapshot {show(root, doc.snapshot or '')}"
    if doc.state in (DocStatus.PENDING, DocStatus.STALE):
        return IN_PROGRESS
    if doc.state is DocStatus.FAILED:
        return failure(doc)
    return invalid(root, doc.snapshot) if doc.snapshot else None


def pointer(root: str, doc: DocumentInfo) -> str:
    """`source → snapshot`, both absolute."""
    return f"{show(root, doc.path)}{ARROW}{show(root, doc.snapshot or '')}"


_CONFLICT_ADVICE = {
    "content": "remove the conflict markers",
    "add/add": "both sides added it: remove the conflict markers",
}


def conflict(kind: str | None) -> str | None:
    """How to resolve a conflict of `kind` (git's name for it), as an entry's note."""
    if kind is None:
        return None
    advice = _CONFLICT_ADVICE.get(
        kind, "no conflict markers; delete it, or keep it by writing it with a tool"
    )
    return f"{show_text(kind)}: {advice}"


def annotated(path_text: str, notes: list[str | None]) -> str:
    """An entry followed by its notes in parentheses, if it has any."""
    kept = [note for note in notes if note]
    return f"{path_text} ({'; '.join(kept)})" if kept else path_text


def tally(counts: Counter[str], order: Sequence[str]) -> str:
    """`312 created, 4 deleted`: counts in `order`, then any other label by name."""
    labels = [label for label in order if counts.get(label)]
    labels += sorted(label for label in counts if label not in order and counts[label])
    return ", ".join(f"{count(counts[label])} {_label(label, counts[label])}" for label in labels)


def _label(label: str, n: int) -> str:
    return _SINGULAR.get(label, label) if n == 1 else label


def group(root: str, path: str, counts: Counter[str], order: Sequence[str]) -> str:
    """A folder group: `/abs/notes/2024/: 312 created, 4 deleted`."""
    return f"{folder(root, path)}: {tally(counts, order)}"


def git_operation(
    op: GitOperation, grouped: Mapping[str, Counter[str]] | None, others: bool = False
) -> str:
    """`HEAD moved a1b2c3d → e4f5a6b by checkout: 1,204 paths in this project`, and whether
    they are listed below or counted here (`grouped`: counts by kind of those folded, per
    folder; "" alone counts them in this line, other folders in lines that follow it;
    `others`: some of its paths are told below all the same)."""
    head = _head_moved(op)
    if op.count == 0:
        return f"{head}: no paths in this project changed."
    paths = f"{count(op.count)} path{'' if op.count == 1 else 's'} in this project"
    if grouped is None:
        return f"{head}: {paths}, listed below."
    total: Counter[str] = Counter()
    for counts in grouped.values():
        total.update(counts)
    counted = tally(total, CHANGE_LABELS)
    if set(grouped) == {""}:
        rest = "; the others below" if others else ""
        return f"{head}: {paths}; counted here, not listed one by one: {counted}{rest}."
    if others:
        n = count(sum(total.values()))
        return f"{head}: {paths}; {n} counted by folder ({counted}), the others below:"
    return f"{head}: {paths}, counted by folder, not listed one by one ({counted}):"


def _head_moved(op: GitOperation) -> str:
    """`HEAD moved a1b2c3d → e4f5a6b by checkout`."""
    to = short_commit(op.to_commit)
    moved = f"{short_commit(op.from_commit)}{ARROW}{to}" if op.from_commit else f"to {to}"
    by = f" by {show_text(op.operation, 40)}" if op.operation != "other" else ""
    return f"HEAD moved {moved}{by}"


def folded_entry(group: ChangeGroup) -> str:
    """A HEAD move or scope change the log keeps only as a count, with its epochs."""
    span = epochs(group.first_epoch, group.last_epoch)
    entry = group.entry
    if entry is not None and entry.kind is ChangeKind.GIT:
        op = GitOperation.from_detail(entry.detail)
        paths = f"{count(op.count)} path{'' if op.count == 1 else 's'} in this project"
        return f"{_head_moved(op)} ({span}): {paths}, counted in the folders above."
    return f"The project's scope changed ({span})."


def source_note(src: Source) -> str:
    """Who changed a path, as proven: a session, a git operation, a refresh, or nobody
    freshline knows ("outside freshline")."""
    if src.kind is SourceKind.SESSION:
        agent = f", {show_text(src.agent, 40)}" if src.agent else ""
        return f"by freshline session {show_text(src.name, 80)}{agent}"
    if src.kind is SourceKind.GIT:
        op = show_text(src.name, 40)
        what = f"git {op}" if src.name and src.name != "other" else "a git operation"
        moved = f"{short_commit(src.from_commit)}{ARROW}" if src.from_commit else "to "
        return f"by {what} ({moved}{short_commit(src.to_commit)})"
    if src.kind is SourceKind.REFRESH:
        return f"by the refresh from {refresh_target(src.name)}"
    return "outside freshline"


def refresh_target(name: str) -> str:
    """The rev a refresh or sync merged, named one way whichever way it was given
    (`refs/heads/main` and `main` are both `main`)."""
    return show_text(short_ref(name), 120) or "the checkout target"


def stale_line(root: str, stale: StaleRead) -> str:
    """`you read /abs/notes/plan.md at turn 3; it has changed since (outside freshline)`."""
    verb = "wrote" if stale.wrote else "read"
    if stale.change is ChangeKind.DELETED:
        since = "it was deleted since"
    elif stale.change is ChangeKind.LEFT:
        since = "it has left the project since, though the file is still there"
    elif stale.change is ChangeKind.RENAMED:
        since = f"it was renamed to {show(root, stale.new_path or '')} since"
    else:
        since = "it has changed since"
    seen = f"you {verb} {show(root, stale.path)} at turn {count(stale.turn)}"
    return f"{seen}; {since} ({source_note(stale.source)})"


def reason(root: str, path: str, detail: Mapping[str, Any] | None) -> str | None:
    """Why the file at `path` entered or left the project, in words (`now tagged
    #personal`, `mobile is now false`, `excluded by folder /abs/Drafts/`), if known."""
    named = frozenset({path})
    return reason_text(dict(detail) if detail else None, lambda p: source(root, p, named))


def epochs(first: int, last: int) -> str:
    """`epoch 5` or `epochs 5–9`: the span a count of earlier changes covers."""
    return f"epoch {count(first)}" if first == last else f"epochs {count(first)}–{count(last)}"


def command(budget: Budget | None, *words: str) -> str:
    """A freshline command as the agent can run it: from any directory (the absolute
    executable and `--workspace` the channel's process was started with) when the
    budget knows them, quoted for a shell."""
    program = budget.command if budget and budget.command else ("freshline",)
    return " ".join(_shell_word(word) for word in (*program, *words))


def _shell_word(word: str) -> str:
    """One word of a command, quoted so that a shell reads exactly it: as `shlex` quotes
    it, or, when it holds what a block escapes, as `$'…'` with those escapes."""
    shown = escape(word)
    return shlex.quote(word) if shown == word else "$'" + shown.replace("'", "\\'") + "'"


def _paged(budget: Budget | None, *words: str) -> str:
    """`command` for a paged listing, at the channel's budget, from page 1."""
    channel = budget.channel if budget else None
    at = ["--channel", channel.value] if channel and channel not in _BUILT_IN else []
    return command(budget, *words, *at, "--page", "1")


def changes_way_back(budget: Budget | None, project: str, since: int) -> str:
    """The updates block's last line once rolled up: the way to the full list."""
    lead = "Some changes above are grouped, not listed one by one: "
    channel = budget.channel if budget else None
    if channel in _MCP_TOOLS:
        session = show_text((budget.session if budget else None) or "SESSION")
        return (f'{lead}page the full list with {_MCP_TOOLS[channel]}project_changes('
                f'session="{session}", since={since}, page=1) (one folder\'s: folder="…").')
    cli = f"`{_paged(budget, 'changes', project, '--since', str(since))}`"
    if channel in _BUILT_IN:
        return f"{lead}page the full list with the changes tool (since={since}), or run {cli}."
    return (f"{lead}run {cli} for the full list, a page at a time; add `--folder FOLDER` for "
            "one folder's.")


def files_way_back(budget: Budget | None, project: str) -> str:
    """The manifest's last line once rolled up: the way to every file and document."""
    lead = "Some files or documents above are counted per folder, not listed one by one: "
    channel = budget.channel if budget else None
    if channel in _BUILT_IN:
        return f"{lead}list a folder with the list tool; the read tool reads a document's snapshot."
    if channel in _MCP_TOOLS:
        return (f"{lead}page them with {_files_call(channel, project)} (one folder's: "
                'folder="…"); read_document(path) reads any of them (a converted document '
                "as its snapshot).")
    if channel is None:
        return f"{lead}enumerate them with your tools."
    cli = _paged(budget, "project", "files", project)
    return (f"{lead}run `{cli}` for every file and document (with its snapshot), a page at "
            "a time; add `--folder FOLDER` for one folder's.")


def forgotten_page(budget: Budget | None, project: str, since: int) -> str:
    """What a page of changes says when the log no longer reaches `since`."""
    channel = budget.channel if budget else None
    if channel in _MCP_TOOLS:
        how = _files_call(channel, project)
    else:
        how = f"`{_paged(budget, 'project', 'files', project)}`"
    return (f"The change log no longer reaches epoch {count(since)}, so what changed since "
            f"cannot be listed: page what the project holds now with {how}.")


def _files_call(channel: Channel, project: str) -> str:
    """`project_files(project="vault", page=1)`, as an MCP-tool channel names it."""
    name = show_text(project).replace('"', "\\x22")
    return f'{_MCP_TOOLS[channel]}project_files(project="{name}", page=1)'


def upgraded(up: Upgrade) -> str:
    """One line for all the project's snapshots a converter's new version makes again."""
    older = ", ".join(show_text(v, 20) for v in up.older)
    documents = f"{count(up.count)} document{'' if up.count == 1 else 's'}"
    return (f"freshline's {show_text(up.converter, 40)} converter is now version "
            f"{show_text(up.version, 20)} (was {older}): the snapshots of {documents} in "
            "this project are made again as each is next read, and may read differently "
            "(other line numbers); read a snapshot again before citing it.")


def rewound(r: Rewound) -> str:
    """What a rewind of the conversation did, as the agent must take it."""
    asked = f' "{show_text(r.prompt, 120)}"' if r.prompt else ""
    if r.files and r.transcript:
        return (f"The conversation was rewound to before the message{asked}: you remember "
                "only what came before it, and the files are as they were when it was sent.")
    if r.files:
        return (f"The files were rewound to how they were when the message{asked} was sent: "
                "the changes made to them since are undone, though you remember making them.")
    return (f"The conversation was rewound to before the message{asked}: you remember only "
            "what came before it, but the files keep every change made since.")
