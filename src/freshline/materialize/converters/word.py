"""DOCX: headings, paragraphs, list items (nested, numbered) and tables, in document
order, as markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshline.materialize.converters.base import (
    Converter,
    Limits,
    check_unpacked_size,
    join_blocks,
    list_item,
    markdown_table,
    reading,
)


class DocxConverter(Converter):
    """Word documents through python-docx."""

    name = "docx"
    version = "2"
    extensions = (".docx",)

    def extract(self, path: Path, limits: Limits) -> str:
        check_unpacked_size(path, limits)
        import docx

        with reading("DOCX"):
            document = docx.Document(str(path))
        return join_blocks(_block(item) for item in document.iter_inner_content())


def _block(item: Any) -> str:
    from docx.table import Table

    if isinstance(item, Table):
        return markdown_table([[cell.text for cell in row.cells] for row in item.rows])
    return _paragraph(item)


def _paragraph(paragraph: Any) -> str:
    text = str(paragraph.text).strip()
    if not text:
        return ""
    style = paragraph.style.name if paragraph.style is not None else ""
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ")
        return "#" * min(int(level), 6) + f" {text}" if level.isdigit() else f"# {text}"
    level = _list_level(paragraph, style)
    if level is None:
        return text
    return list_item(text, level, 1 if "Number" in style else None)


def _list_level(paragraph: Any, style: str) -> int | None:
    """A list item's nesting (0 at the top), or None for a paragraph that is not one:
    the numbering's own level, else the style's (`List Bullet 2` is level 1)."""
    properties = paragraph._p.pPr
    numbering = properties.numPr if properties is not None else None
    if numbering is not None and numbering.ilvl is not None:
        return int(numbering.ilvl.val)
    if numbering is None and not style.startswith("List"):
        return None
    last = style.rsplit(" ", 1)[-1]
    return int(last) - 1 if last.isdigit() else 0
