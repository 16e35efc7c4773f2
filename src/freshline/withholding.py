"""The content scan as every reader uses it: paths allowed by `[security] allow_secrets_in`,
a cache by content (git blob id), and a note of each file something was withheld from.

Every text that leaves freshline passes a `Withholder` first: the agent's tool results,
MCP's `read_document`, the ACP proxy's `fs/read_text_file` answers, snapshots as they are
written, conversation commits, and the files of a live conversation tree. A file whose
text holds a secret is recorded in a live tree as its withheld text (so a conversation
never stores the value, and a `diff` shows `[secret withheld: …]` where it stood); a file
with more than one hard link is left out of the tree, as every reader refuses it.

What was withheld, by path, is kept in `found` until the session layer stores it (the
`withheld` table: what `freshline status` flags).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from freshline.beneath import Kind, open_beneath
from freshline.errors import WorkspaceError
from freshline.paths import ignore_regex
from freshline.secretscan import SecretKind, Withheld, scan
from freshline.tablescan import withhold_cells

CACHE_ENTRIES = 50_000  # blob ids remembered (a clean one costs a few dozen bytes)
_SNIFF = 8192  # bytes looked at to tell text from binary


@dataclass(frozen=True)
class TreeContent:
    """How a live tree records one file."""

    keep: bool  # as indexed: `data` is the indexed blob's content
    data: bytes | None = None  # the bytes to record; None: left out of the tree
    blob: str = ""  # their git blob id


LEAVE_OUT = TreeContent(False)


@dataclass(frozen=True)
class Found:
    """What was withheld from one file's content (`blob`)."""

    blob: str
    kinds: tuple[SecretKind, ...]


def blob_id_bytes(data: bytes) -> str:
    """The git blob id of `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _scanned(text: str) -> Withheld:
    """`text` through the scan, then its tables' cells (`tablescan`)."""
    found = scan(text)
    if "|" not in found.text:
        return found
    cells = withhold_cells(found.text)
    return Withheld(cells.text, found.kinds + cells.kinds) if cells.count else found


def _binary(head: bytes) -> bool:
    """Whether bytes look binary (a NUL among them): binary files are not scanned."""
    return b"\0" in head


@dataclass
class Withholder:
    """Withholds secrets from texts on their way out, unless their path is allowed."""

    allowed: Sequence[str] = ()  # `[security] allow_secrets_in` patterns
    allow_hardlinks: bool = False
    found: dict[str, Found] = field(default_factory=dict)  # not yet stored, by path
    _cache: OrderedDict[str, Withheld | None] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def is_allowed(self, rel: str | None) -> bool:
        """Whether `rel`'s content is never scanned (`allow_secrets_in`)."""
        return bool(rel and self.allowed and ignore_regex(tuple(self.allowed)).match(rel))

    def text(self, text: str, rel: str | None = None, noted_as: str | None = None) -> Withheld:
        """`text` with its secrets withheld: the scan's, and table cells'
        (`tablescan`). The verdict is remembered by the text's own content, so it is
        always the verdict of exactly this text. When any secret was withheld it is noted
        under file `rel`, with `noted_as` (the content `status` compares with the index:
        the file's or a document's blob) or the text's own."""
        if self.is_allowed(rel):
            return Withheld(text)
        key = blob_id_bytes(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            known = key in self._cache
            cached = self._cache.get(key)
        if not known:
            result = _scanned(text)
            cached = result if result.count else None
            with self._lock:
                self._cache[key] = cached
                while len(self._cache) > CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        if cached is None:
            return Withheld(text)
        if rel:
            with self._lock:
                self.found[rel] = Found(noted_as or key, cached.kinds)
        return cached

    def tree_content(self, rel: str, root: Path, blob: str) -> TreeContent:
        """How a live tree records file `rel` of `root` (indexed as `blob`), read once,
        beneath the root and through no link: as read (`data`, when it is not `blob`), as
        its withheld text, or not at all (a hard link, a binary file holding a secret,
        something that is no longer a regular file)."""
        try:
            with open_beneath(root, rel, follow=False) as opened:
                if opened.kind is not Kind.FILE or opened.info is None:
                    return LEAVE_OUT
                if opened.info.st_nlink > 1 and not self.allow_hardlinks:
                    return LEAVE_OUT
                data = opened.read()
        except (OSError, WorkspaceError):
            return LEAVE_OUT
        read = blob_id_bytes(data)
        if self.is_allowed(rel):
            return TreeContent(True, data, read)
        screened = self._screened(data, rel, read)
        if screened is None:
            return LEAVE_OUT
        if screened != data:
            return TreeContent(False, screened, blob_id_bytes(screened))
        return TreeContent(read == blob, data, read)

    def _screened(self, data: bytes, rel: str, read: str) -> bytes | None:
        """`data` with its secrets withheld in its own encoding; None for a binary file
        holding a secret (it cannot be stored withheld)."""
        if not _binary(data[:_SNIFF]):
            withheld = self.text(data.decode("utf-8", "replace"), rel, read)
            return withheld.text.encode("utf-8") if withheld.count else data
        from freshline.textforms import binary_texts, decoded  # a binary file's first screen

        other = decoded(data)
        if other is not None:
            withheld = self.text(other.text, rel, read)
            return other.encode(withheld.text) if withheld.count else data
        for text in binary_texts(data):
            if self.text(text, rel, read).count:
                return None
        return data

    def take_found(self) -> dict[str, Found]:
        """What was withheld since the last call, by path (for the store)."""
        with self._lock:
            found, self.found = self.found, {}
        return found
