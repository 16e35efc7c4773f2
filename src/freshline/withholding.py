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
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from freshline.paths import ignore_regex
from freshline.secretscan import SecretKind, Withheld, scan

CACHE_ENTRIES = 50_000  # blob ids remembered (a clean one costs a few dozen bytes)
_SNIFF = 8192  # bytes looked at to tell text from binary


@dataclass(frozen=True)
class TreeContent:
    """How a live tree records one file."""

    keep: bool  # as it is (its indexed blob)
    data: bytes | None = None  # else these bytes instead; None: left out of the tree


KEEP = TreeContent(True)
LEAVE_OUT = TreeContent(False)


@dataclass(frozen=True)
class Found:
    """What was withheld from one file's content (`blob`)."""

    blob: str
    kinds: tuple[SecretKind, ...]


def blob_id_bytes(data: bytes) -> str:
    """The git blob id of `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


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

    def text(
        self, text: str, rel: str | None = None, blob: str | None = None,
        noted_as: str | None = None,
    ) -> Withheld:
        """`text` with its secrets withheld. `blob`: the git blob id of exactly the bytes
        `text` was decoded from, when known (the cache key; else the text is hashed).
        When any secret was withheld it is noted under file `rel`, with `noted_as` (the
        content `status` compares with the index: a document's own blob) or the key."""
        if self.is_allowed(rel):
            return Withheld(text)
        key = blob or blob_id_bytes(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            known = key in self._cache
            cached = self._cache.get(key)
        if not known:
            result = scan(text)
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

    def tree_content(self, rel: str, path: Path, blob: str) -> TreeContent:
        """How a live tree records file `rel` (at `path`, indexed as `blob`): as it is, as
        its withheld text, or not at all (a hard link)."""
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                return KEEP
            if info.st_nlink > 1 and not self.allow_hardlinks:
                return LEAVE_OUT
            if self.is_allowed(rel):
                return KEEP
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return LEAVE_OUT
        if _binary(data[:_SNIFF]):
            return KEEP
        text = data.decode("utf-8", "replace")
        withheld = self.text(text, rel, blob_id_bytes(data))
        if not withheld.count:
            return KEEP if blob_id_bytes(data) == blob else TreeContent(False, data)
        return TreeContent(False, withheld.text.encode("utf-8"))

    def take_found(self) -> dict[str, Found]:
        """What was withheld since the last call, by path (for the store)."""
        with self._lock:
            found, self.found = self.found, {}
        return found
