"""Secrets in tables: a cell named by the cell before it or by its column's header (pure).

No line of a table assigns anything, so a spreadsheet's row `| password | Zq8#…|` or a
column headed `api key` held its secret past the scan (issue 47: a password cell of an
.xlsx stayed in its snapshot). Here each cell is judged as the scan judges an assignment:
`name = "value"`, once with the cell to its left as the name and once with its column's
header, by `secretscan.find_secrets` itself, so a table follows whatever the scan's rules
say a secret's name and value look like.

`withhold_cells` does it for the markdown tables of a text (a snapshot's sheets, a note's
tables): lines that begin and end with `|`, the first of each table its header, cells
split at every `|` not escaped. A cell already withheld is left as it is.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from freshline.secretscan import WITHHELD, WITHHELD_PREFIX, SecretKind, Withheld, find_secrets

_CELL = re.compile(r"(?:\\.|[^|\\])*")  # a cell's text: anything but an unescaped pipe
_RULE = re.compile(r"[\s:|-]*")  # a table's `| --- | :-: |` line
_NAME_JUNK = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Cell:
    """One cell of a table: its text and where it stands in the text it came from."""

    text: str
    start: int = 0
    end: int = 0


def secret_cells(rows: Sequence[Sequence[Cell]]) -> dict[tuple[int, int], SecretKind]:
    """The cells holding a secret, by (row, column), with its kind; `rows[0]` is the
    header. Every (name, cell) pair is one line of a single text the scan reads once."""
    header = rows[0] if rows else ()
    lines: list[str] = []
    where: list[tuple[tuple[int, int], int, int]] = []  # cell, line start, value start
    at = 0
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            names = [row[c - 1].text] if c else []
            if r and c < len(header):
                names.append(header[c].text)
            for line, value_at in _assignments(names, cell.text):
                where.append(((r, c), at, at + value_at))
                lines.append(line)
                at += len(line) + 1
    found: dict[tuple[int, int], SecretKind] = {}
    for finding in find_secrets("\n".join(lines)):
        index = bisect_right(where, finding.start, key=lambda w: w[1]) - 1
        spot, _, value_at = where[index]
        if finding.start >= value_at:  # in the value, not the name
            found.setdefault(spot, finding.kind)
    return found


def _assignments(names: Sequence[str], value: str) -> Iterator[tuple[str, int]]:
    """`name = "value"` for each name a cell may be judged by, and where its value starts."""
    value = value.strip()
    if not value or WITHHELD_PREFIX in value or '"' in value or "\n" in value:
        return
    for name in names:
        key = _NAME_JUNK.sub("_", name.strip()).strip("_")
        if key and WITHHELD_PREFIX not in name:
            yield f'{key} = "{value}"', len(key) + 4


def markdown_tables(text: str) -> Iterator[list[list[Cell]]]:
    """The markdown tables of `text`: rows of cells with their spans, rule lines left out."""
    table: list[list[Cell]] = []
    at = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        stripped = body.strip()
        if len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|"):
            if not _RULE.fullmatch(stripped):
                table.append(_cells(body, at))
        elif table:
            yield table
            table = []
        at += len(line)
    if table:
        yield table


def _cells(line: str, at: int) -> list[Cell]:
    """The cells of one table line that starts at offset `at` of its text."""
    cells: list[Cell] = []
    pos = line.index("|") + 1
    end = line.rindex("|")
    while pos <= end:
        match = _CELL.match(line, pos)
        assert match is not None  # the pattern matches the empty string
        raw = match.group(0)
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        start = at + pos + lead
        cells.append(Cell(text, start, start + len(text)))
        pos = match.end() + 1
    return cells


def withhold_cells(text: str) -> Withheld:
    """`text` with each table cell that holds a secret withheld (one line stays one line)."""
    spans: list[tuple[int, int, SecretKind]] = []
    for rows in markdown_tables(text):
        for (r, c), kind in secret_cells(rows).items():
            spans.append((rows[r][c].start, rows[r][c].end, kind))
    if not spans:
        return Withheld(text)
    out: list[str] = []
    at = 0
    for start, end, kind in sorted(spans):
        out += [text[at:start], WITHHELD.format(kind=kind.value)]
        at = end
    out.append(text[at:])
    return Withheld("".join(out), tuple(kind for _, _, kind in sorted(spans)))
