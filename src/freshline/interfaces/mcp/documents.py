"""What `read_document` returns: a file's text, a document's snapshot text, or why there
is none yet (the MCP server's and the HTTP server's, from `service.FreshlineService`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from freshline.materialize import DocStatus
from freshline.secretscan import count_note
from freshline.withholding import Withholder

READ_CAP = 200_000  # characters of a file or snapshot returned by one read_document call
_SNIFF = 8192  # bytes read to tell text from binary


@dataclass
class DocumentText:
    """A file's text, a document's snapshot text, or why there is none yet."""

    path: str  # the file read: a document's source path, also when asked by its snapshot
    status: str  # text | binary | ready | stale | pending | failed | deleted
    text: str | None
    note: str | None


def plain_text(rel: str, source: Path) -> DocumentText:
    """A plain file's text (capped), or that it is binary."""
    with source.open("rb") as handle:
        head = handle.read(_SNIFF)
    if b"\0" in head:
        note = "a binary file with no text form"
        return DocumentText(path=rel, status="binary", text=None, note=note)
    return DocumentText(path=rel, status="text", text=_read_text(source), note=None)


def _read_text(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        text = handle.read(READ_CAP + 1)
    if len(text) > READ_CAP:
        return text[:READ_CAP] + f"\n[capped at {READ_CAP} characters]"
    return text


def document_text(
    rel: str, status: DocStatus, snapshot: Path | None, reason: str | None
) -> DocumentText:
    """A document's snapshot text, or why there is none: deleted, failed, pending."""
    note: str | None
    if status is DocStatus.DELETED:
        note = "the document was deleted: its old snapshot is invalid, do not cite it"
        return DocumentText(path=rel, status=status.value, text=None, note=note)
    if status is DocStatus.FAILED:
        note = f"converting this document to text failed: {reason or 'unknown reason'}"
        return DocumentText(path=rel, status=status.value, text=None, note=note)
    if snapshot is None or not snapshot.is_file():
        note = "being converted to text; not readable yet (try again later)"
        return DocumentText(path=rel, status=DocStatus.PENDING.value, text=None, note=note)
    note = "an older snapshot: the document changed since" if status is DocStatus.STALE else None
    return DocumentText(path=rel, status=status.value, text=_read_text(snapshot), note=note)


def withheld(read: DocumentText, withholder: Withholder, blob: str | None) -> DocumentText:
    """`read` (of a file whose content is `blob`) with the secrets in its text withheld,
    its note saying how many."""
    if read.text is None:
        return read
    found = withholder.text(read.text, read.path, noted_as=blob)
    if not found.count:
        return read
    note = "; ".join(n for n in (read.note, count_note(found.kinds)) if n)
    return replace(read, text=found.text, note=note)
