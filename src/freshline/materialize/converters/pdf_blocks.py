"""A page's lines cut into blocks: paragraphs, list items, code and tables (pure).

A block ends where the next line leaves its column, changes size, weight or font
family, starts a list item or an indented paragraph, or sits more than a line's
height below. Which blocks are headings is decided for the whole document
(`pdf_headings.py`), since a size is large only against the body's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from freshline.materialize.converters.base import markdown_table
from freshline.materialize.converters.markers import unmark
from freshline.materialize.converters.pdf_layout import Line
from freshline.materialize.converters.pdf_tables import Table

BULLETS = "•◦▪▫‣●○■□·∙–—*-"
ITEM = re.compile(
    rf"^(?:[{re.escape(BULLETS)}]\s*|\(?(?:\d{{1,3}}|[a-z]|[ivx]{{1,4}})[.)]\s+)(?=\S)"
)
PARAGRAPH_SKIP = 1.6  # of the font size, middle to middle: more is a new paragraph
SPACING_SKIP = 1.3  # of the page's usual step between lines of a size: more is one too
MIN_STEPS = 5  # steps between lines of one size before their usual one is believed
MAX_SPACING = 2.5  # of the font size: the widest usual step (double spacing is about 2)
INDENT = 0.8  # of the font size: a line starting this far right opens a paragraph
MONO_WIDTH = 0.6  # of the font size: a monospaced glyph's advance, for indentation


class Kind(Enum):
    """What a block is rendered as."""

    PARAGRAPH = "paragraph"  # lines re-flowed into one
    HEADING = "heading"  # `#` to `######`, by level
    ITEM = "item"  # a list item: `- ` or its own number
    CODE = "code"  # monospaced lines kept as they are, fenced
    TABLE = "table"  # a ruled table as a markdown table


@dataclass
class Block:
    """Consecutive lines read as one unit, or a table."""

    kind: Kind
    lines: list[Line] = field(default_factory=list)
    table: Table | None = None
    level: int = 0  # a heading's, 1 to 6
    _text: tuple[int, str] | None = None  # the text, and of how many lines

    @property
    def text(self) -> str:
        """The lines re-flowed into one line of text."""
        if self._text is None or self._text[0] != len(self.lines):
            self._text = (len(self.lines), reflow([line.text for line in self.lines]))
        return self._text[1]

    @property
    def size(self) -> float:
        return self.lines[0].size if self.lines else 0.0


def blocks(lines: Sequence[Line], tables: Sequence[Table]) -> list[Block]:
    """The page's blocks in reading order, its tables placed among them."""
    found: list[Block] = []
    spacing = _spacing(lines)
    last: Block | None = None
    for line in lines:
        kind = Kind.CODE if line.mono else Kind.ITEM if ITEM.match(line.text) else Kind.PARAGRAPH
        if last is not None and _continues(last, line, kind, spacing):
            last.lines.append(line)
        else:
            last = Block(kind, [line])
            found.append(last)
    for table in tables:
        _place(found, table)
    return _rejoined(found)


def _rejoined(found: list[Block]) -> list[Block]:
    """A paragraph a column's end cut (no full stop, the next column going on in lower
    case) made whole again."""
    out: list[Block] = []
    for block in found:
        last = out[-1] if out else None
        if (last is not None and last.kind is block.kind is Kind.PARAGRAPH
                and last.lines[-1].column != block.lines[0].column
                and last.text[-1:] not in ".!?:" and block.lines[0].text[:1].islower()):
            last.lines.extend(block.lines)
        else:
            out.append(block)
    return out


def _spacing(lines: Sequence[Line]) -> dict[float, float]:
    """The usual step from one line to the next, by size (a double-spaced preprint's is
    twice a book's): the median of the steps between lines of one size in one column."""
    steps: dict[float, list[float]] = {}
    for previous, line in zip(lines, lines[1:], strict=False):
        same = line.column == previous.column and line.size == previous.size
        step = _step(previous, line)
        if same and 0 < step < 3 * line.size:
            steps.setdefault(line.size, []).append(step)
    return {
        size: min(sorted(found)[len(found) // 2], MAX_SPACING * size)
        for size, found in steps.items() if len(found) >= MIN_STEPS
    }


def _step(previous: Line, line: Line) -> float:
    """From one line's middle to the next's."""
    return (line.top + line.bottom) / 2 - (previous.top + previous.bottom) / 2


def _continues(block: Block, line: Line, kind: Kind, spacing: dict[float, float]) -> bool:
    previous = block.lines[-1]
    if line.column != previous.column or block.kind is Kind.TABLE:
        return False
    size = max(previous.size, line.size)
    step = _step(previous, line)
    if not 0 < step <= max(PARAGRAPH_SKIP * size, SPACING_SKIP * spacing.get(size, 0.0)):
        return False
    if block.kind is Kind.CODE or kind is Kind.CODE:
        return block.kind is kind
    if kind is Kind.ITEM or abs(line.size - previous.size) > 0.6 or line.bold != previous.bold:
        return False
    if block.kind is Kind.ITEM:  # an item's own lines stand right of its bullet
        return line.x0 > block.lines[0].x0 + INDENT * line.size / 2
    indented = line.x0 - previous.x0 > INDENT * line.size
    centered = abs(line.x0 + line.x1 - previous.x0 - previous.x1) < line.size  # a title's
    return not indented or centered or (len(block.lines) == 1 and line.x0 < previous.x0)


def _place(found: list[Block], table: Table) -> None:
    """Put a table before the first block below it that overlaps it across."""
    for index, block in enumerate(found):
        line = block.lines[0] if block.lines else None
        below = line is not None and line.top >= table.bottom - 1
        if below and line is not None and line.x1 > table.x0 and line.x0 < table.x1:
            found.insert(index, Block(Kind.TABLE, table=table))
            return
    found.append(Block(Kind.TABLE, table=table))


def reflow(texts: Sequence[str]) -> str:
    """Lines of one paragraph as one line: a word broken at a line's end is joined."""
    joined = ""
    for text in texts:
        if not joined:
            joined = text
        elif joined.endswith("-") and joined[-2:-1].isalpha() and text[:1].islower():
            joined += text  # `low-` / `density`: the hyphen stays, the word is whole
        else:
            joined += " " + text
    return unmark(joined)


def render(block: Block) -> str:
    """One block as markdown."""
    if block.kind is Kind.TABLE and block.table is not None:
        return markdown_table([[unmark(cell) for cell in row] for row in block.table.rows])
    if block.kind is Kind.CODE:
        return _code(block.lines)
    text = block.text
    if block.kind is Kind.HEADING:
        return "#" * block.level + " " + text
    if block.kind is Kind.ITEM:
        return _item(text)
    return _literal(text)


def _item(text: str) -> str:
    marker = ITEM.match(text)
    if marker is None:
        return _literal(text)
    bullet = marker.group(0).strip()
    rest = text[marker.end():]
    if bullet[:1] in BULLETS:
        return "- " + rest
    if bullet[0].isdigit():
        return f"{bullet.strip('()').rstrip('.)')}. {rest}"
    return f"- {bullet} {rest}"


def _literal(text: str) -> str:
    # A paragraph must not read as markdown structure it never had.
    if text.startswith(("#", "<!--", "```")) or ITEM.match(text):
        return "\\" + text
    return text


def _code(lines: Sequence[Line]) -> str:
    left = min(line.x0 for line in lines)
    body = [
        " " * round((line.x0 - left) / (MONO_WIDTH * line.size)) + unmark(line.text)
        for line in lines
    ]
    fence = "````" if any("```" in text for text in body) else "```"
    return "\n".join([fence, *body, fence])
