"""What `read_document` returns: a file's text, a document's snapshot text, or why there
is none yet (the MCP server's and the HTTP server's, from `service.FreshlineService`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from freshline.beneath import Kind, Opened, open_inside
from freshline.errors import WorkspaceError
from freshline.materialize import DocStatus
from freshline.secretscan import count_note
from freshline.tracker.hashing import blob_id_fd
from freshline.withholding import Withholder, blob_id_bytes

READ_CAP = 200_000  # characters of a file or snapshot returned by one read_document call
# Bytes read (and scanned) of a file: what a capped answer can hold, and a margin past it,
# so a key block the cap cuts through is still seen whole and withheld before the cut.
READ_BYTES = 4 * READ_CAP + (64 << 10)
_SNIFF = 8192  # bytes read to tell text from binary


@dataclass
class DocumentText:
    """A file's text, a document's snapshot text, or why there is none yet."""

    path: str  # the file read: a document's source path, also when asked by its snapshot
    status: str  # text | binary | ready | stale | pending | failed | deleted
    text: str | None
    note: str | None


def plain_text(rel: str, source: Opened) -> tuple[DocumentText, str | None]:
    """A plain file's text (not capped yet), or that it is binary, read once from the
    open file; and the git blob id of the file as read."""
    data = source.read(READ_BYTES)
    if b"\0" in data[:_SNIFF]:
        note = "a binary file with no text form"
        return DocumentText(path=rel, status="binary", text=None, note=note), None
    blob = blob_id_bytes(data) if len(data) < READ_BYTES else _blob_of(source)
    text = data.decode("utf-8", "replace")
    return DocumentText(path=rel, status="text", text=text, note=None), blob


def _blob_of(source: Opened) -> str | None:
    """The blob of a file larger than what is read of it (None: it kept changing)."""
    try:
        return blob_id_fd(source.fd)
    except OSError:
        return None


def document_text(
    rel: str, status: DocStatus, snapshot: Path | None, reason: str | None, root: Path
) -> DocumentText:
    """A document's snapshot text (opened under `root` through no link; not capped yet),
    or why there is none: deleted, failed, pending."""
    note: str | None
    if status is DocStatus.DELETED:
        note = "the document was deleted: its old snapshot is invalid, do not cite it"
        return DocumentText(path=rel, status=status.value, text=None, note=note)
    if status is DocStatus.FAILED:
        note = f"converting this document to text failed: {reason or 'unknown reason'}"
        return DocumentText(path=rel, status=status.value, text=None, note=note)
    text = _snapshot_text(snapshot, root) if snapshot is not None else None
    if text is None:
        note = "being converted to text; not readable yet (try again later)"
        return DocumentText(path=rel, status=DocStatus.PENDING.value, text=None, note=note)
    note = "an older snapshot: the document changed since" if status is DocStatus.STALE else None
    return DocumentText(path=rel, status=status.value, text=text, note=note)


def _snapshot_text(snapshot: Path, root: Path) -> str | None:
    try:
        with open_inside(root, snapshot) as opened:
            if opened.kind is not Kind.FILE:
                return None
            return opened.read(READ_BYTES).decode("utf-8", "replace")
    except (OSError, WorkspaceError):
        return None


def withheld(read: DocumentText, withholder: Withholder, blob: str | None) -> DocumentText:
    """`read` (of a file whose content is `blob`) with the secrets in its text withheld,
    its note saying how many, then capped: the scan sees what the cap would cut."""
    if read.text is None:
        return read
    found = withholder.text(read.text, read.path, noted_as=blob)
    if found.count:
        read = replace(read, note="; ".join(n for n in (read.note, count_note(found.kinds)) if n))
    return replace(read, text=_capped(found.text))


def _capped(text: str) -> str:
    if len(text) > READ_CAP:
        return text[:READ_CAP] + f"\n[capped at {READ_CAP} characters]"
    return text
