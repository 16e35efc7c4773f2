"""The HTML parser behind the html converter: headings, lists, links, tables and `pre`
blocks as markdown (see `web.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from freshline.materialize.converters.base import markdown_table

HIDDEN = frozenset({"script", "style", "template", "noscript", "svg", "iframe", "object"})
BLOCKS = frozenset(
    "p div section article header footer main nav aside blockquote figure figcaption "
    "form dl dt dd address details summary hr".split()
)
HEADINGS = {f"h{n}": n for n in range(1, 7)}


class HtmlReader(HTMLParser):
    """Feeds on HTML, writes markdown (`markdown()` once closed)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sinks: list[list[str]] = [[]]  # innermost last: a table cell or a link
        self.tables: list[_Table] = []
        self.links: list[str] = []
        self.hidden = 0
        self.in_head = False
        self.in_pre = 0
        self.lists = 0  # depth of open ul/ol, for indenting nested items

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in HIDDEN:
            self.hidden += 1
        elif tag == "head":
            self.in_head = True
        elif tag == "body":
            self.in_head = False
        elif tag in HEADINGS:
            self._write("\n\n" + "#" * HEADINGS[tag] + " ")
        elif tag == "li":
            self._write("\n" + "  " * max(0, self.lists - 1) + "- ")
        elif tag in ("ul", "ol"):
            self.lists += 1
            self._write("" if self.lists > 1 else "\n\n")
        elif tag == "br":
            self._write("\n")
        elif tag in BLOCKS:
            self._write("\n\n")
        elif tag == "pre":
            self.in_pre += 1
            self._write("\n\n```\n")
        elif tag == "a":
            self.links.append(dict(attrs).get("href") or "")
            self.sinks.append([])
        else:
            self._start_table_part(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag == "head":
            self.in_head = False
        elif tag in HEADINGS or tag in BLOCKS:
            self._write("\n\n")
        elif tag in ("ul", "ol") and self.lists:
            self.lists -= 1
            self._write("" if self.lists else "\n\n")
        elif tag == "pre" and self.in_pre:
            self.in_pre -= 1
            self._write("\n```\n\n")
        elif tag == "a" and self.links:
            self._end_link()
        else:
            self._end_table_part(tag)

    def handle_data(self, data: str) -> None:
        if self.hidden or self.in_head:
            return
        self._write(data if self.in_pre else re.sub(r"\s+", " ", data))

    def _write(self, text: str) -> None:
        if not (self.hidden or self.in_head):
            self.sinks[-1].append(text)

    def _pop_sink(self) -> str:
        return " ".join("".join(self.sinks.pop()).split()) if len(self.sinks) > 1 else ""

    def _end_link(self) -> None:
        text, href = self._pop_sink(), self.links.pop()
        linkable = href and not href.startswith(("#", "javascript:"))
        self._write(f"[{text}]({href})" if text and linkable else text)

    def _start_table_part(self, tag: str) -> None:
        if tag == "table":
            self.tables.append(_Table())
        elif tag in ("tr", "td", "th") and self.tables:
            self._close_cell()
            table = self.tables[-1]
            if tag == "tr" or not table.rows:
                table.rows.append([])
            if tag != "tr":
                table.cell_open = True
                self.sinks.append([])

    def _end_table_part(self, tag: str) -> None:
        if tag in ("tr", "td", "th") and self.tables:
            self._close_cell()
        elif tag == "table" and self.tables:
            self._close_cell()
            rows = [row for row in self.tables.pop().rows if any(row)]
            self._write("\n\n" + markdown_table(rows) + "\n\n")

    def _close_cell(self) -> None:
        table = self.tables[-1]
        if table.cell_open and len(self.sinks) > 1:
            table.rows[-1].append(self._pop_sink())
        table.cell_open = False

    def markdown(self) -> str:
        while len(self.sinks) > 1:  # unclosed links or cells: keep their text
            text = self._pop_sink()
            self._write(text)
        return _tidy("".join(self.sinks[0]))


@dataclass
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    cell_open: bool = False


def _normalize(line: str) -> str:
    words = " ".join(line.split())
    if words.startswith("- "):  # a list item keeps its nesting
        return line[: len(line) - len(line.lstrip(" "))] + words
    return words


def _tidy(text: str) -> str:
    lines: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.strip() == "```":
            fenced = not fenced
            lines.append("```")
            continue
        lines.append(line.rstrip() if fenced else _normalize(line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
