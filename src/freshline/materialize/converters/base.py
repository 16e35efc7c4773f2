"""What every converter shares: the base class, the limits it honours, its failure type,
and the small markdown helpers the office formats have in common."""

from __future__ import annotations

import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from freshline.errors import FreshlineError

MIB = 1024 * 1024
_ITEM = re.compile(r"^ *(?:-|\d+\.) ")


class ConversionFailed(FreshlineError):
    """A document could not be turned into text; the message is the failure reason."""


@dataclass(frozen=True)
class Limits:
    """Bounds a converter checks itself (time and memory are enforced by the worker)."""

    max_unpacked_bytes: int = 256 * MIB  # zip-based formats: declared uncompressed total
    max_rows: int = 500  # spreadsheets: rows shown per sheet


class Converter(ABC):
    """Turns one document format into markdown text.

    Subclasses set `name`, `version` and `extensions` (lower case, with the dot) and
    override `extract`. Instances are pickled into worker processes, so a converter must
    be a module-level class whose state is plain data. The `path` given has the document's
    own name and opens the very file freshline checked (a link in a private folder to the
    worker's open descriptor): read it, as often as needed, but write nothing beside it.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    extensions: ClassVar[tuple[str, ...]]

    @abstractmethod
    def extract(self, path: Path, limits: Limits) -> str:
        """Return the document's text as markdown; raise ConversionFailed with a reason."""

    def convert(self, path: Path, limits: Limits) -> str:
        """Extract the text, markers a library left inside words taken out (`markers.py`),
        and fail with "no extractable text" when there is none."""
        from freshline.materialize.converters.markers import unmark

        text = unmark(self.extract(path, limits)).strip()
        if not _has_words(text):
            raise ConversionFailed("no extractable text")
        return text + "\n"


def _has_words(text: str) -> bool:
    # Headers we add ourselves ("## Slide 3", "<!-- page 3 -->") are not text the
    # document had.
    lines = (line for line in text.splitlines() if not line.startswith(("## ", "<!-- page ")))
    return any(ch.isalnum() for line in lines for ch in line)


def allocation_failed(exc: BaseException) -> bool:
    """True for errors that mean memory ran out (MemoryError, zlib's Z_MEM_ERROR)."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, zlib.error) and ("allocate" in text or "memory" in text)


@contextmanager
def reading(kind: str) -> Iterator[None]:
    """Turn a library's error while opening a file into a reason naming the format.

    Running out of memory is re-raised as MemoryError, so it is reported as such.
    """
    try:
        yield
    except ConversionFailed:
        raise
    except Exception as exc:
        if allocation_failed(exc):
            raise MemoryError(str(exc)) from exc
        raise ConversionFailed(f"not a readable {kind} ({first_line(exc)})") from exc


def first_line(exc: BaseException) -> str:
    """The first line of an error's message, or its type when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".")[:300] if lines else type(exc).__name__


def check_unpacked_size(path: Path, limits: Limits) -> None:
    """Refuse a zip whose entries declare more than the limit when unpacked (a zip bomb)."""
    import zipfile  # only converters of zipped formats need it

    try:
        with zipfile.ZipFile(path) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConversionFailed(f"not a valid office file ({exc})") from exc
    if total > limits.max_unpacked_bytes:
        raise ConversionFailed(
            f"unpacks to {total // MIB} MiB, over the {limits.max_unpacked_bytes // MIB} MiB"
            " limit (zip bomb?)"
        )


def cell_text(value: object) -> str:
    """One table cell as markdown: no line breaks, pipes escaped."""
    text = "" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """Render rows as a markdown table, the first row as the header."""
    width = max((len(row) for row in rows), default=0)
    if width == 0:
        return ""
    lines = [_table_line([*row, *[""] * (width - len(row))]) for row in rows]
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)


def _table_line(row: Iterable[object]) -> str:
    return "| " + " | ".join(cell_text(cell) for cell in row) + " |"


def join_blocks(blocks: Iterable[str]) -> str:
    """Join non-empty markdown blocks with blank lines; consecutive list items (`- `, `1. `,
    indented or not) make one list, one item a line."""
    parts: list[str] = []
    for block in blocks:
        block = block.strip("\n").rstrip() if _ITEM.match(block.lstrip("\n")) else block.strip()
        if not block:
            continue
        joined = parts and _ITEM.match(parts[-1].rsplit("\n", 1)[-1]) and _ITEM.match(block)
        parts.append(parts.pop() + "\n" + block if joined else block)
    return "\n\n".join(parts)


def list_item(text: str, level: int = 0, number: int | None = None) -> str:
    """A markdown list item at a nesting `level`: `- text`, or `N. text` when numbered."""
    marker = f"{number}." if number is not None else "-"
    return "  " * max(0, level) + f"{marker} {text}"
