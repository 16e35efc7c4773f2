"""Words and columns for people: plurals, aligned tables, one-line clips (pure, no imports
beyond the standard library, so the fast commands can use them)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Sequence

# Nouns whose plural is not the singular + "s".
_IRREGULAR = {"entry": "entries", "match": "matches", "batch": "batches", "is": "are",
              "was": "were", "has": "have", "this": "these"}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, in the plural unless the count is one: `1 file`, `2 files`."""
    word = noun if count == 1 else (many or _IRREGULAR.get(noun, noun + "s"))
    return f"{count} {word}"


def columns(headers: Sequence[str], rows: Sequence[Sequence[str]], gap: int = 2) -> list[str]:
    """A table as plain lines: a header row, then each row, every column left-aligned
    to its widest cell (the last column is not padded). Cells are printed as they are."""
    table = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    lines = []
    for row in table:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append((" " * gap).join([*cells, row[-1]]).rstrip())
    return lines


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def duration(seconds: float) -> str:
    """A length of time as people say it, to its two largest units: `45 s`, `12 min`,
    `3 h 5 min`, `2 d 4 h`."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    units = [("d", 86_400), ("h", 3_600), ("min", 60)]
    parts: list[str] = []
    for name, size in units:
        count, whole = divmod(whole, size)
        if count or parts:
            parts.append(f"{count} {name}")
    return " ".join(p for p in parts[:2] if not p.startswith("0 "))
