"""The sentences the model reads, in one place so the wording can be reviewed as a whole."""

from __future__ import annotations

from collections.abc import Iterable

from freshline.materialize.status import DocStatus
from freshline.scope import Pattern, PatternKind

from .model import DocumentInfo
from .wire import ARROW, absolute, show, show_path, show_text

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
COMPACTED = (
    "The change log was compacted, so the full list of changes is gone: re-enumerate the "
    "project with your tools before relying on anything you read earlier."
)
IN_PROGRESS = "converting: read the raw file for now; the snapshot follows on a later turn"
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
