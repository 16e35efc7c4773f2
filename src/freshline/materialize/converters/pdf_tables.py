"""Tables a page draws as a grid of rules, with the text of each cell (pure).

Rules that meet make a grid; its distinct rule positions cut it into rows and columns,
and each run whose middle lies in a cell is that cell's text. A grid of fewer than two
rows or columns (a framed box) is not a table, nor one whose cells are mostly empty (a
plot's grid). Tables drawn without vertical rules are read as text.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from freshline.materialize.converters.pdf_layout import Rule, Span

TOUCH = 2.0  # points: rules this close meet
FILLED = 0.4  # the least share of a table's cells that hold text
MAX_RULES = 600  # a page drawing more (a chart, a map) is not searched for grids


@dataclass(frozen=True)
class Table:
    """A ruled table: its box (top-down) and its cells' text, row by row."""

    x0: float
    top: float
    x1: float
    bottom: float
    rows: list[list[str]]


def find_tables(rules: Sequence[Rule], spans: Sequence[Span]) -> tuple[list[Table], list[Span]]:
    """The ruled tables of a page, and the runs that are not inside one."""
    tables: list[Table] = []
    rest = list(spans)
    if len(rules) > MAX_RULES:
        return tables, rest
    for grid in _grids(rules):
        ys = _positions(r.at for r in grid if r.horizontal)
        xs = _positions(r.at for r in grid if not r.horizontal)
        if len(ys) < 3 or len(xs) < 3:  # fewer than two rows or columns: a frame, a box
            continue
        inside = [s for s in rest if _within(s, xs, ys)]
        table = _table(inside, xs, ys)
        if table is not None:
            tables.append(table)
            taken = set(map(id, inside))
            rest = [s for s in rest if id(s) not in taken]
    return tables, rest


def _grids(rules: Sequence[Rule]) -> list[list[Rule]]:
    """Rules grouped by which meet which (connected components)."""
    parent = list(range(len(rules)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Each rule's position and its reach, a touch longer at both ends.
    reach = [(i, r.at, r.start - TOUCH, r.end + TOUCH) for i, r in enumerate(rules)]
    across = [found for found, rule in zip(reach, rules, strict=True) if rule.horizontal]
    down = [found for found, rule in zip(reach, rules, strict=True) if not rule.horizontal]
    for i, y, left, right in across:
        for j, x, top, bottom in down:
            if left <= x <= right and top <= y <= bottom:  # they meet
                parent[root(i)] = root(j)
    groups: dict[int, list[Rule]] = {}
    for i, rule in enumerate(rules):
        groups.setdefault(root(i), []).append(rule)
    return [g for g in groups.values() if len(g) >= 4]


def _positions(values: Iterable[float]) -> list[float]:
    merged: list[float] = []
    for value in sorted(values):
        if not merged or value - merged[-1] > TOUCH:
            merged.append(value)
    return merged


def _within(span: Span, xs: list[float], ys: list[float]) -> bool:
    x, y = (span.x0 + span.x1) / 2, (span.top + span.bottom) / 2
    return xs[0] < x < xs[-1] and ys[0] < y < ys[-1]


def _table(spans: Sequence[Span], xs: list[float], ys: list[float]) -> Table | None:
    cells: dict[tuple[int, int], list[Span]] = {}
    for span in spans:
        row = bisect_right(ys, (span.top + span.bottom) / 2) - 1
        column = bisect_right(xs, (span.x0 + span.x1) / 2) - 1
        cells.setdefault((row, column), []).append(span)
    if len(cells) < FILLED * (len(xs) - 1) * (len(ys) - 1):
        return None  # mostly empty: a plot's grid, not a table
    rows = [
        [_cell_text(cells.get((r, c), [])) for c in range(len(xs) - 1)]
        for r in range(len(ys) - 1)
    ]
    rows = [row for row in rows if any(row)]
    return Table(xs[0], ys[0], xs[-1], ys[-1], rows)


def _cell_text(spans: list[Span]) -> str:
    ordered = sorted(spans, key=lambda s: (round((s.top + s.bottom) / 2), s.x0))
    return " ".join(" ".join(s.text.split()) for s in ordered).strip()
