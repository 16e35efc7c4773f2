"""Content similarity of two versions of a text file, for renames that also edited it (pure).

A deleted file's bytes are gone by the time a scan sees it deleted, so the index keeps,
for each text file up to `TEXT_CAP` bytes, its *line sketch*: the CRC-32 of every line
(cheap enough to take on every hash). Similarity is git's rename score (diffcore-delta)
with lines as the chunks: the bytes of the old version found again in the new one, over
the larger of the two sizes. A line's bytes are known from the new version, which is on
disk; the old one needs only its sketch and size. A pair at or above `RENAME_SIMILARITY`
is a rename. Weighing by bytes keeps a blank line or a `---` fence from making two short
notes look alike. A file's last line ends at its last newline: there is no empty line after
it. Below `SMALL_FILE` bytes a line or two decide the score, so a very small file is alike
only to its own bytes (`k` and `q` are not one note renamed).
"""

from __future__ import annotations

import zlib
from array import array
from collections import Counter

TEXT_CAP = 256 * 1024  # larger files pair as renames only when their bytes are identical
BINARY_SNIFF = 8000  # git's rule: a NUL byte in the first 8000 bytes means binary
RENAME_SIMILARITY = 0.5
SMALL_FILE = 32  # bytes: a file smaller than this is renamed only when its bytes are identical


def sketch(data: bytes) -> bytes | None:
    """The line sketch of a file's bytes, or None for a binary or too large file."""
    if len(data) > TEXT_CAP or data.find(b"\0", 0, BINARY_SNIFF) >= 0:
        return None
    return array("I", map(zlib.crc32, data.split(b"\n"))).tobytes()


def similarity(old_sketch: bytes, old_size: int, new: bytes) -> float:
    """The share (0 to 1) of the larger version made of lines the two have in common:
    `old_sketch` and `old_size` describe the old version, `new` is the new one's bytes."""
    larger = max(old_size, len(new))
    if larger < SMALL_FILE:
        same = old_size == len(new) and sketch(new) == old_sketch
        return 1.0 if same else 0.0
    old_lines = Counter(array("I", old_sketch))
    new_lines: Counter[int] = Counter()
    width: dict[int, int] = {}
    lines = new.split(b"\n")
    last = lines.pop()  # b"" after a final newline: no line at all
    for line in lines:
        crc = zlib.crc32(line)
        new_lines[crc] += 1
        width[crc] = len(line) + 1  # with its newline
    if last:
        crc = zlib.crc32(last)
        new_lines[crc] += 1
        width[crc] = len(last)
    common = sum(min(n, old_lines[crc]) * width[crc] for crc, n in new_lines.items())
    return min(common, larger) / larger
