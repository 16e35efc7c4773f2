"""PPTX: per slide a `## Slide N: title` header, its text (a content placeholder's
paragraphs as a list, nested by their level) and tables, then its notes."""

from __future__ import annotations

from collections.abc import Iterator
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


class PptxConverter(Converter):
    """PowerPoint decks through python-pptx."""

    name = "pptx"
    version = "2"
    extensions = (".pptx",)

    def extract(self, path: Path, limits: Limits) -> str:
        check_unpacked_size(path, limits)
        import pptx

        with reading("PPTX"):
            deck = pptx.Presentation(str(path))
        return join_blocks(_slide(n, slide) for n, slide in enumerate(deck.slides, 1))


def _slide(number: int, slide: Any) -> str:
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text.split()) if title_shape is not None else ""
    header = f"## Slide {number}: {title}" if title else f"## Slide {number}"
    title_id = title_shape.shape_id if title_shape is not None else None
    others = (shape for shape in slide.shapes if shape.shape_id != title_id)
    blocks = [header, *(_shape_blocks(others))]
    notes = _notes(slide)
    if notes:
        blocks.append(f"Notes: {notes}")
    return join_blocks(blocks)


def _shape_blocks(shapes: Any) -> Iterator[str]:
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None:  # a group: its members in order
            yield from _shape_blocks(shape.shapes)
        elif getattr(shape, "has_table", False):
            rows = shape.table.rows
            yield markdown_table([[cell.text for cell in row.cells] for row in rows])
        elif getattr(shape, "has_text_frame", False):
            yield _frame_text(shape.text_frame, _bulleted(shape))


def _bulleted(shape: Any) -> bool:
    """A body or content placeholder: its paragraphs are bullets (the layout's)."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    if not getattr(shape, "is_placeholder", False):
        return False
    return shape.placeholder_format.type in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)


def _frame_text(frame: Any, bulleted: bool = False) -> str:
    lines = []
    for paragraph in frame.paragraphs:
        text = paragraph.text.strip()
        if text:
            level = paragraph.level
            lines.append(list_item(text, level) if bulleted or level else text)
    return "\n".join(lines)


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return _frame_text(frame).strip() if frame is not None else ""
