"""What `read` and `search` show of a file: its text with secrets withheld, whole or by
lines, capped.

A file is read whole, once, from the descriptor confinement opened, and the bytes read are
scanned before any of it is shown (never a verdict cached for what the file held a moment
earlier): a line range cut out of a private key block would not look like one, and a
search over the raw text would tell, match by match, what a withheld value holds.
Withholding keeps line numbers, so a range and a search hit name the lines they would
name in the file.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from freshline.agent.confine import ToolError
from freshline.beneath import Opened
from freshline.secretscan import SecretKind, count_note
from freshline.withholding import Withholder, blob_id_bytes

SCAN_LIMIT = 64 << 20  # bytes: a larger text file is not read (it could not be scanned cheaply)
SNIFF = 8192  # bytes read to tell text from binary


@dataclass(frozen=True)
class FileText:
    """A file's text as shown: secrets withheld."""

    text: str
    kinds: tuple[SecretKind, ...] = ()
    blob: str = ""  # the git blob id of the bytes read: exactly what was shown
    size: int = 0  # bytes read

    def noted(self, shown: str) -> str:
        """`shown`, followed by how many secrets were withheld when any were."""
        return f"{shown}\n{count_note(self.kinds)}" if self.kinds else shown


def is_binary(head: bytes) -> bool:
    """Whether the first bytes of a file look binary (a NUL, or not UTF-8 early on)."""
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # a character cut at the sniff boundary is fine
    return False


def load(opened: Opened, shown: str, rel: str, withholder: Withholder) -> FileText:
    """The text of the open file `opened` (shown as `shown`; file `rel` of the workspace),
    read once and scanned as read, with its secrets withheld. ToolError for a binary or
    too large file."""
    if opened.size > SCAN_LIMIT:
        if is_binary(opened.read(SNIFF)):
            raise ToolError(f"{shown}: binary file, {opened.size} bytes")
        raise _too_large(shown, opened.size)
    data = opened.read(SCAN_LIMIT + 1)
    if is_binary(data[:SNIFF]):
        raise ToolError(f"{shown}: binary file, {len(data)} bytes")
    if len(data) > SCAN_LIMIT:
        raise _too_large(shown, len(data))
    blob = blob_id_bytes(data)
    withheld = withholder.text(data.decode("utf-8", "replace"), rel, noted_as=blob)
    return FileText(withheld.text, withheld.kinds, blob, len(data))


def _too_large(shown: str, size: int) -> ToolError:
    return ToolError(f"{shown}: {size} bytes, more than the {SCAN_LIMIT >> 20} MiB "
                     "freshline checks for secrets before showing; refused")


def whole(text: str, shown: str, size: int, cap: int) -> str:
    """All of `text`, or its first `cap` characters and how to read the rest."""
    if not text:
        return f"({shown} is empty)"
    if len(text) <= cap:
        return text
    return (text[:cap] + f"\n[output capped at {cap} characters; "
            f"the file has {size} bytes: read a line range with start and end]")


def lines(text: str, shown: str, start: int, end: int | None, cap: int) -> str:
    """Lines `start` to `end` (1-based, inclusive; None: to the end) of `text`, capped."""
    if start < 1 or (end is not None and end < start):
        raise ToolError("start must be at least 1 and end at least start")
    taken: list[str] = []
    used, last, capped = 0, start - 1, False
    for number, line in enumerate(io.StringIO(text, newline=""), 1):
        if number < start:
            continue
        if end is not None and number > end:
            break
        capped = used + len(line) > cap
        taken.append(line[: cap - used] if capped else line)
        used, last = used + len(line), number
        if capped:
            break
    if last < start:
        return f"[{shown} has fewer than {start} lines]"
    tail = f"\n[output capped at {cap} characters]" if capped else ""
    return f"[{shown} lines {start}-{last}]\n" + "".join(taken) + tail
