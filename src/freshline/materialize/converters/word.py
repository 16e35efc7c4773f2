"""DOCX: headings, paragraphs, list items and tables, in document order, as markdown."""

from __future__ import annotations

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


class DocxConverter(Converter):
    """Word documents through python-docx."""

    name = "docx"
    version = "1"
    extensions = (".docx",)

    def extract(self, path: Path, limits: Limits) -> str:
        check_unpacked_size(path, limits)
        import docx

        with reading("DOCX"):
            document = docx.Document(str(path))
        return _join_lists(_block(item) for item in document.iter_inner_content())


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
    if style.startswith("List") or _numbered(paragraph):
        return f"- {text}"
    return text


def _numbered(paragraph: Any) -> bool:
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


def _join_lists(blocks: Any) -> str:
    # Consecutive list items form one markdown list: no blank lines between them.
    parts: list[str] = []
    for block in (b for b in blocks if b):
        joined = parts and parts[-1].startswith("- ") and block.startswith("- ")
        parts.append(parts.pop() + "\n" + block if joined else block)
    return join_blocks(parts)
