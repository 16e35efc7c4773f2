"""Trees as this process knows them: each entry parsed, its bytes in the tree object kept
beside it.

A checkpoint of another agent's prompt changes one entry of a folder of hundreds; encoding
every entry again to write that folder's tree cost more than the rest of the checkpoint.
A `Tree` keeps each entry's sort key and encoded bytes, so a tree with a few entries
changed is written by encoding those few, sorting the keys and joining the bytes. The
trees this process wrote or read lately stay known (`KNOWN`, bounded by their entries):
the next write over them reads nothing, neither from git nor from disk. A known tree is
never changed: `changed` returns a new one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

TREE_MODE = "40000"
Entry = tuple[str, str]  # (mode, oid) of one path; mode "40000" for a subtree
Chunk = tuple[bytes, bytes]  # an entry's sort key (a subtree's name ends with "/") and bytes
KNOWN_ENTRIES = 400_000  # entries of the trees kept known: a 200,000-file project's folders


def _chunk(name: str, entry: Entry) -> Chunk:
    mode, oid = entry
    raw = name.encode("utf-8", "surrogateescape")
    key = raw + b"/" if mode == TREE_MODE else raw
    return key, mode.encode() + b" " + raw + b"\0" + bytes.fromhex(oid)


@dataclass(frozen=True)
class Tree:
    """One tree: its entries by name, and each one's sort key and bytes in the object."""

    entries: dict[str, Entry]
    chunks: dict[str, Chunk]

    @classmethod
    def of(cls, entries: dict[str, Entry]) -> Tree:
        """The tree of `entries` (each encoded once)."""
        return cls(entries, {name: _chunk(name, e) for name, e in entries.items()})

    @classmethod
    def parse(cls, raw: bytes) -> Tree:
        """A tree object's bytes, read."""
        entries: dict[str, Entry] = {}
        chunks: dict[str, Chunk] = {}
        pos = 0
        while pos < len(raw):
            space = raw.index(b" ", pos)
            nul = raw.index(b"\0", space)
            name_bytes, mode = raw[space + 1 : nul], raw[pos:space].decode()
            name = name_bytes.decode("utf-8", "surrogateescape")
            entries[name] = (mode, raw[nul + 1 : nul + 21].hex())
            key = name_bytes + b"/" if mode == TREE_MODE else name_bytes
            chunks[name] = (key, raw[pos : nul + 21])
            pos = nul + 21
        return cls(entries, chunks)

    def changed(self, entries: dict[str, Entry], names: Iterable[str]) -> Tree:
        """This tree with `entries`, a copy of its own edited at `names` only."""
        chunks = dict(self.chunks)
        for name in names:
            if name in entries:
                chunks[name] = _chunk(name, entries[name])
            else:
                chunks.pop(name, None)
        return Tree(entries, chunks)

    def raw(self) -> bytes:
        """The tree object's bytes (git's order: by name, a subtree's with "/" after it)."""
        return b"".join(chunk for _, chunk in sorted(self.chunks.values()))

    def order(self) -> list[str]:
        """Its names in the object's order."""
        return sorted(self.chunks, key=lambda name: self.chunks[name][0])


EMPTY = Tree({}, {})


class KnownTrees:
    """Trees by id, the most recently used kept up to `limit` entries in all (threads
    share it: the watcher answers hooks on one and converts on others)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._trees: OrderedDict[str, Tree] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, oid: str) -> Tree | None:
        """A tree, if known."""
        with self._lock:
            tree = self._trees.get(oid)
            if tree is not None:
                self._trees.move_to_end(oid)
            return tree

    def put(self, oid: str, tree: Tree) -> None:
        """Remember a tree (the least recently used go past the limit)."""
        with self._lock:
            if oid in self._trees:
                self._trees.move_to_end(oid)
                return
            self._trees[oid] = tree
            self._size += len(tree.entries)
            while self._size > self.limit and self._trees:
                self._size -= len(self._trees.popitem(last=False)[1].entries)


KNOWN = KnownTrees(KNOWN_ENTRIES)
