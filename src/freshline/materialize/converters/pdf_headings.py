"""Which blocks of a document are headings, and at what level (pure).

The body size is the size most of the document's characters have. A short block set
larger than it is a heading, its level the rank of its size among the heading sizes
(largest first). A short block all in bold at the body's size, or a short line that
starts with a section number (`2.1`, `IV.`, `B.`), is a heading one level below the
sized ones. A document's outline, when it has one, names headings too, at its depth.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from freshline.materialize.converters.pdf_blocks import Block, Kind
from freshline.materialize.converters.pdf_layout import OutlineEntry, make_line

MAX_CHARS = 200  # a heading is short
MAX_LINES = 3
LARGER = 1.1  # a heading's size is at least this times the body's
NUMBERED = re.compile(r"^(?:(\d{1,2}(?:\.\d{1,2}){0,3})\.?|([IVX]{1,5})\.|([A-H])\.)\s+[A-Z]")
_WORD = re.compile(r"\w+")
# Each ASCII byte that is no word character (not a letter, digit or `_`) made a space.
_ASCII_WORDS = bytes(c if chr(c).isalnum() or c == 95 else 32 for c in range(256))
_RUN_IN_ENDS = ".:—– "  # what ends a run-in heading, and starts its paragraph
_CONTENTS_LINE = re.compile(r"(?:\.\s*){4,}\S{1,6}$")  # `2 Usage . . . . 5`: a table of contents


def mark_headings(pages: Sequence[list[Block]], outline: Sequence[OutlineEntry]) -> None:
    """Set kind and level on each block of `pages` that is a heading."""
    body = _body_size(pages)
    short = [block for blocks in pages for block in blocks if _short(block)]
    sizes = _heading_sizes(short, body)
    below = len(sizes) + 1
    for block in short:
        level = _level(block, body, sizes, below)
        if level:
            block.kind, block.level = Kind.HEADING, min(level, 6)
    for blocks in pages:
        _split_run_in(blocks, min(below, 6))
    if outline:
        _mark_outline(pages, outline, 1 + any(b.level == 1 for p in pages for b in p))


def _split_run_in(blocks: list[Block], level: int) -> None:
    """A paragraph that opens with a few words in bold (`Abstract—`, `Motivation.`) has
    them as a heading of its own, the paragraph after it."""
    index = 0
    while index < len(blocks):
        block = blocks[index]
        lead = _run_in(block) if block.kind is Kind.PARAGRAPH else 0
        if lead:
            first = block.lines[0]
            head, rest = make_line(first.spans[:lead]), make_line(first.spans[lead:])
            head.text, rest.text = head.text.rstrip(_RUN_IN_ENDS), rest.text.lstrip(_RUN_IN_ENDS)
            head.column = rest.column = first.column
            heading = Block(Kind.HEADING, [head], level=level)
            blocks[index:index + 1] = [heading, Block(Kind.PARAGRAPH, [rest, *block.lines[1:]])]
        index += 1


def _run_in(block: Block) -> int:
    """How many runs of the block's first line make a run-in heading (0: none): bold
    ones, one to four words, ending in `.`, `:` or a dash, or one word alone, before
    text that is not bold."""
    spans = block.lines[0].spans
    lead = 0
    while lead < len(spans) and (spans[lead].bold or not spans[lead].text.strip()):
        lead += 1
    if lead == len(spans) > 1 and spans[1].text.lstrip()[:1] in ("—", "–"):
        lead = 1  # all in bold (an IEEE abstract): the dash still ends the heading
    if lead == 0 or lead == len(spans):
        return 0
    words = " ".join(s.text for s in spans[:lead]).split()
    ends = words[-1][-1:] in _RUN_IN_ENDS or spans[lead].text.lstrip()[:1] in _RUN_IN_ENDS
    return lead if 0 < len(words) <= 4 and (ends or len(words) == 1) else 0


def _body_size(pages: Sequence[Sequence[Block]]) -> float:
    weights: Counter[float] = Counter()
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                weights[round(line.size * 2) / 2] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _short(block: Block) -> bool:
    lines = block.lines
    if not 0 < len(lines) <= MAX_LINES or block.kind not in (Kind.PARAGRAPH, Kind.ITEM):
        return False
    if sum(len(line.text) for line in lines) > MAX_CHARS + MAX_LINES:
        return False
    text = block.text
    if len(text) > MAX_CHARS or _CONTENTS_LINE.search(text):
        return False
    return any(len(w) > 1 and w.isalpha() for w in _WORD.findall(text))


def _heading_sizes(short: Sequence[Block], body: float) -> list[float]:
    found = {round(b.size * 2) / 2 for b in short if b.size >= body * LARGER and b.size >= body + 1}
    return sorted(found, reverse=True)


def _level(block: Block, body: float, sizes: list[float], below: int) -> int:
    """A short block's heading level, 0 when it is none."""
    size = round(block.size * 2) / 2
    if size in sizes:
        return sizes.index(size) + 1
    largest = max(line.largest for line in block.lines)
    if largest < body - 1 or block.text.rstrip()[-1:] in ".,;":
        return 0
    if all(line.bold for line in block.lines) and len(block.lines) <= 2:
        return below
    numbered = NUMBERED.match(block.text)
    if numbered and len(block.lines) == 1 and len(block.text.split()) <= 12:
        return below + _depth(numbered) - 1
    return 0


def _depth(numbered: re.Match[str]) -> int:
    arabic, roman, _letter = numbered.groups()
    if arabic:
        return arabic.count(".") + 1
    return 1 if roman else 2


def _mark_outline(
    pages: Sequence[list[Block]], outline: Sequence[OutlineEntry], offset: int
) -> None:
    normals: dict[str, str] = {}  # a page's texts are compared with each of its entries

    def normal(text: str) -> str:
        found = normals.get(text)
        if found is None:
            found = normals[text] = _normal(text)
        return found

    for entry in outline:
        title = _normal(entry.title)
        if not title or entry.page < 0:
            continue
        for page in (entry.page, entry.page + 1):
            block = _titled(pages[page], title, normal) if page < len(pages) else None
            if block is not None:
                block.kind, block.level = Kind.HEADING, min(entry.depth + offset, 6)
                break


def _titled(blocks: list[Block], title: str, normal: Callable[[str], str]) -> Block | None:
    """The block the outline's `title` names: a short block whose text is the title (or
    starts with it), or a line of a paragraph that is, split out of it."""
    for index, block in enumerate(blocks):
        if block.kind is Kind.CODE or block.kind is Kind.TABLE:
            continue
        if len(block.lines) <= MAX_LINES and _names(normal(block.text), title):
            return block
        for at, line in enumerate(block.lines):
            if normal(line.text) == title:
                return _split(blocks, index, at)
    return None


def _names(text: str, title: str) -> bool:
    begins = len(title) > 3 and text.startswith(title) and len(text) < 2 * len(title) + 8
    return text == title or begins


def _split(blocks: list[Block], index: int, at: int) -> Block:
    """Line `at` of block `index` made a block of its own (what came before and after it
    stay blocks of the old kind); returns it."""
    block = blocks[index]
    before, line, after = block.lines[:at], block.lines[at], block.lines[at + 1:]
    parts = [Block(block.kind, before)] if before else []
    alone = Block(Kind.PARAGRAPH, [line])
    parts += [alone, *([Block(block.kind, after)] if after else [])]
    blocks[index:index + 1] = parts
    return alone


def _normal(text: str) -> str:
    """The words of `text` in lower case, one space apart (as a title is compared)."""
    if text.isascii():  # the same by bytes, at C speed: a page's every line is compared
        return " ".join(text.lower().encode().translate(_ASCII_WORDS).decode().split())
    return " ".join(_WORD.findall(text.lower()))
