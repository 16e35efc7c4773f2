"""Pointer blobs: how a live tree records a file too large to copy (pure).

A file above `[conversations] max_blob_mb` is recorded as a small text blob naming the
git blob id and size of the content the turn saw, instead of the content itself, so a
200 MB PDF is not copied into a conversation (its snapshot, named by the same blob id, is
what the agent read). The tree still says exactly what the turn saw: the pointer names it.

    freshline-pointer 1
    blob <40 hex digits>
    size <bytes>
"""

from __future__ import annotations

import hashlib
import re

HEADER = "freshline-pointer 1"
_POINTER = re.compile(rf"{HEADER}\nblob ([0-9a-f]{{40}})\nsize (\d+)\n")


def pointer(blob: str, size: int) -> bytes:
    """The pointer blob's content for a file with git blob id `blob` and `size` bytes."""
    return f"{HEADER}\nblob {blob}\nsize {size}\n".encode()


def parse_pointer(data: bytes) -> tuple[str, int] | None:
    """(blob id, size) when `data` is a pointer blob, else None."""
    match = _POINTER.fullmatch(data.decode("ascii", "replace"))
    return (match.group(1), int(match.group(2))) if match else None


def blob_id(data: bytes) -> str:
    """Git's id of a blob holding `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def recorded_oid(blob: str, size: int, cap: int | None) -> str:
    """The blob id a live tree records for a file: its own, or its pointer's when it is
    larger than `cap` bytes (None: no cap)."""
    if cap is None or size <= cap:
        return blob
    return blob_id(pointer(blob, size))
