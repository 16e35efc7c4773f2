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
    Files (2):
    - /home/u/vault/Research/Papers/a.pdf
    - /home/u/vault/notes/x.md
    </project_context>

Sections appear in this order and only when non-empty. Sources are listed, never expanded;
the files are listed only for a small project (at most `list_files_max`), otherwise one
line gives their count. Entries are sorted and deduplicated; sources sort by kind, then
pattern. At most `cap` entry lines appear over all sections, filled in section order; a
section cut short ends with `… and K more`. Deleted documents are not part of a project
and are not shown.
"""

from __future__ import annotations

from collections.abc import Iterable

from freshline.materialize.status import DocStatus
from freshline.scope import Pattern

from . import phrases
from .model import DocumentInfo, ManifestInput
from .wire import section, show, tag

_CONVERTING = (DocStatus.PENDING, DocStatus.STALE)


def render_manifest(m: ManifestInput) -> str:
    """The `<project_context>` block for `m`: the project's sources and documents."""
    body = [phrases.MANIFEST_INSTRUCTION]
    if m.resumed:
        body.append(phrases.RESUMED)
    if not m.include:
        body.append("Sources: none (this project includes nothing yet).")
    budget = m.cap
    for heading, entries in _sections(m):
        body.extend(section(heading, entries, budget))
        budget = max(budget - len(entries), 0)
    body.extend(_files_count_line(m))
    attributes = [("project", m.project), ("workspace", m.root), ("epoch", m.epoch),
                  ("mode", m.mode)]
    return tag("project_context", attributes, body)


def _sections(m: ManifestInput) -> list[tuple[str, list[str]]]:
    docs = _unique_docs(m.documents)
    by_state = {state: [d for d in docs if d.state is state] for state in DocStatus}
    converting = [d for d in docs if d.state in _CONVERTING]
    sections = [
        ("Sources:", _sources(m.root, m.include, m.files)),
        ("Excluded:", _sources(m.root, m.exclude, m.files)),
        ("Converted documents (source → snapshot):",
         [phrases.pointer(m.root, d) for d in by_state[DocStatus.READY]]),
        ("Documents still converting (read the raw file for now; "
         "the snapshot follows on a later turn):",
         [_converting(m.root, d) for d in converting]),
        ("Failed documents:",
         [phrases.annotated(show(m.root, d.path), [phrases.failure(d)])
          for d in by_state[DocStatus.FAILED]]),
    ]
    if _lists_files(m):
        files = sorted(set(m.files or ()))
        sections.append((f"Files ({len(files)}):", [show(m.root, f) for f in files]))
    return sections


def _sources(
    root: str, sources: Iterable[Pattern], files: Iterable[str] | None
) -> list[str]:
    known = frozenset(files or ())
    return [phrases.source(root, s, known) for s in phrases.sorted_sources(sources)]


def _unique_docs(documents: Iterable[DocumentInfo]) -> list[DocumentInfo]:
    return sorted(set(documents), key=_doc_key)


def _doc_key(doc: DocumentInfo) -> tuple[str, str, str, str]:
    return (doc.path, doc.state.value, doc.snapshot or "", doc.reason or "")


def _converting(root: str, doc: DocumentInfo) -> str:
    older = doc.snapshot if doc.state is DocStatus.STALE else None
    note = f"older snapshot, may be out of date: {show(root, older)}" if older else None
    return phrases.annotated(show(root, doc.path), [note])


def _lists_files(m: ManifestInput) -> bool:
    return m.files is not None and len(set(m.files)) <= m.list_files_max


def _files_count_line(m: ManifestInput) -> list[str]:
    if m.files is None or (_lists_files(m) and m.files):
        return []
    if not m.files:
        return ["Files: none in scope yet."]
    count = len(set(m.files))
    return [f"Files: {count} in scope, too many to list here; enumerate them with your tools."]
