"""XLSX: per sheet a `## Sheet: name` header and a markdown table of its first rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from freshline.materialize.converters.base import (
    Converter,
    Limits,
    check_unpacked_size,
    join_blocks,
    markdown_table,
    reading,
)


class XlsxConverter(Converter):
    """Excel workbooks through openpyxl in read-only mode (rows are streamed)."""

    name = "xlsx"
    version = "1"
    extensions = (".xlsx", ".xlsm")

    def extract(self, path: Path, limits: Limits) -> str:
        check_unpacked_size(path, limits)
        import openpyxl

        with reading("XLSX"):
            workbook = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
        try:
            return join_blocks(_sheet(sheet, limits.max_rows) for sheet in workbook.worksheets)
        finally:
            workbook.close()


def _sheet(sheet: Any, max_rows: int) -> str:
    rows = _nonempty_rows(sheet.iter_rows(values_only=True))
    shown = [list(row) for row in islice(rows, max_rows)]
    left_out = sum(1 for _ in rows)  # keep streaming: counts without holding the rows
    width = max((_width(row) for row in shown), default=0)
    table = markdown_table([row[:width] for row in shown]) if width else ""
    note = f"_{left_out} more rows not shown._" if left_out else ""
    return join_blocks([f"## Sheet: {sheet.title}", table, note])


def _nonempty_rows(rows: Iterator[tuple[Any, ...]]) -> Iterator[list[str]]:
    for row in rows:
        cells = [_value(value) for value in row]
        if any(cells):
            yield cells


def _width(row: list[str]) -> int:
    return max((i + 1 for i, cell in enumerate(row) if cell), default=0)


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)
