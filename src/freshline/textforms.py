"""The texts a file's bytes hold, whatever their format, as the secret scan reads them (pure).

A live conversation tree records every file of the project, and a tree may be pushed: a
secret in a `.docx`, `.xlsx`, `.pptx` or a UTF-16 text file reached trees verbatim
(issue 47), because the scan read only UTF-8 text. So before a file is stored:

- text in UTF-16 or UTF-32 (a byte-order mark, or UTF-16 told by where its NULs fall) is
  decoded (`decoded`), scanned, and stored withheld in its own encoding;
- any other binary file yields its texts (`binary_texts`): the members of a zip archive
  (office documents, OpenDocument, jars), each XML member as its words, with tables as
  markdown rows and an .xlsx's sheets as tables of their cells' values (so a cell named
  by its neighbour or its header is judged as `tablescan` judges it); the streams of a
  PDF, inflated; and the printable runs of the bytes themselves, ASCII and UTF-16.

Everything is bounded (members, bytes inflated, nesting), so a hostile archive costs at
most `INFLATE_LIMIT` bytes of work, never a hang.
"""

from __future__ import annotations

import codecs
import html
import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

INFLATE_LIMIT = 64 << 20  # bytes inflated from one file's archive members or streams
MEMBER_LIMIT = 2000  # archive members looked at
NESTING = 2  # archives inside archives
RUN = 6  # the shortest printable run taken from binary bytes

_BOMS = (  # longest first: UTF-32's little-endian mark begins with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ASCII_RUN = re.compile(rb"[\t\n\r\x20-\x7e]{%d,}" % RUN)
_UTF16_RUN = re.compile(rb"(?:[\t\n\r\x20-\x7e]\x00){%d,}" % RUN)
_STREAM = re.compile(rb"stream\r?\n")
_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)([^>]*?)(/?)>|<[!?][^>]*>|([^<]+)")
_ANY_TAG = re.compile(r"<[^>]*>")
# Where a line ends: a paragraph's end, a break, a tab, a shared string's end.
_BREAK = re.compile(r"</(?:\w+:)?(?:p|si|h)>|<(?:\w+:)?(?:br|tab|cr)\b[^>]*/>")
_ROW_START = re.compile(r"<(?:\w+:)?tr\b")
_ROW = re.compile(r"<((?:\w+:)?)tr\b[^>]*>.*?</\1tr>", re.S)
_CELL = re.compile(r"<(?:\w+:)?tc\b[^>]*>(.*?)</(?:\w+:)?tc>", re.S)
# Members not read: an office file's look (not its words), and pictures.
_SKIPPED = re.compile(r"(?:^|/)(?:theme\d*|styles|stylesWithEffects|fontTable|settings|"
                      r"webSettings|numbering|presProps|viewProps|tableStyles)\.xml$|"
                      r"(?:^|/)(?:theme|slideLayouts|slideMasters|notesMasters)/|"
                      r"\.(?i:png|jpe?g|gif|bmp|tiff?|emf|wmf|svg)$")
_VALUE_TYPE = re.compile(r"""\bt\s*=\s*["']([^"']*)["']""")
_REFERENCE = re.compile(r"""\br\s*=\s*["']([A-Z]{1,3})\d*["']""")


@dataclass(frozen=True)
class Decoded:
    """A text file in an encoding other than UTF-8, decoded."""

    text: str
    encoding: str  # the codec to encode it back with (its byte-order mark apart)
    bom: bytes  # the mark it began with ("" without one)

    def encode(self, text: str) -> bytes:
        """`text` in this file's encoding, with its mark."""
        return self.bom + text.encode(self.encoding, "replace")


def decoded(data: bytes) -> Decoded | None:
    """`data` decoded when it is UTF-16 or UTF-32 text (marked, or UTF-16 whose every
    other byte is NUL in the first kilobytes); None for anything else."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decode(data[len(bom):], encoding, bom)
    head = data[:4096]
    if len(head) < 2 * RUN or len(head) % 2:
        return None
    evens, odds = head[0::2], head[1::2]
    for encoding, nuls, chars in (("utf-16-le", odds, evens), ("utf-16-be", evens, odds)):
        if nuls.count(0) >= 0.9 * len(nuls) and chars.count(0) <= 0.1 * len(chars):
            return _decode(data, encoding, b"")
    return None


def _decode(data: bytes, encoding: str, bom: bytes) -> Decoded | None:
    try:
        return Decoded(data.decode(encoding), encoding, bom)
    except UnicodeDecodeError:
        return None


def binary_texts(data: bytes) -> Iterator[str]:
    """Every text `data` holds that a scan should see, from the most structured form
    (archive members, PDF streams) to its printable runs."""
    budget = _Budget()
    if data.startswith(b"PK\x03\x04"):  # its members are its content: their bytes, not the zip's
        yield from _zip_texts(data, budget, NESTING)
        return
    if data.startswith(b"%PDF-"):
        yield from _pdf_texts(data, budget)
    yield from printable_runs(data)


def printable_runs(data: bytes) -> Iterator[str]:
    """The runs of printable ASCII in `data`, and of UTF-16 little-endian ASCII."""
    text = "\n".join(m.group(0).decode("ascii") for m in _ASCII_RUN.finditer(data))
    if text:
        yield text
    wide = "\n".join(m.group(0).decode("utf-16-le") for m in _UTF16_RUN.finditer(data))
    if wide:
        yield wide


class _Budget:
    """Bytes still to be inflated for one file."""

    def __init__(self) -> None:
        self.left = INFLATE_LIMIT

    def take(self, wanted: int) -> int:
        granted = max(0, min(wanted, self.left))
        self.left -= granted
        return granted


def _zip_texts(data: bytes, budget: _Budget, depth: int) -> Iterator[str]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [i for i in archive.infolist() if not i.is_dir()][:MEMBER_LIMIT]
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        yield from printable_runs(data)  # not a zip after all: its bytes as they are
        return
    parts: dict[str, bytes] = {}
    for info in members:
        if _SKIPPED.search(info.filename):
            continue
        body = _member(archive, info, budget)
        if body is not None:
            parts[info.filename] = body
    shared = _shared_strings(parts.get("xl/sharedStrings.xml", b""))
    for name, body in parts.items():
        if name.startswith("xl/worksheets/") and name.endswith(".xml"):
            yield _sheet_table(body, shared)
        elif name.endswith((".xml", ".rels", ".vml")):
            yield _xml_words(body)
        elif body.startswith(b"PK\x03\x04") and depth > 1:
            yield from _zip_texts(body, budget, depth - 1)
        else:
            yield from printable_runs(body)


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget) -> bytes | None:
    """A member's bytes, as many as the budget grants (None: it cannot be read)."""
    allowed = budget.take(info.file_size + 1)
    try:
        with archive.open(info) as handle:
            return handle.read(allowed)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError, OSError,
            EOFError, zlib.error):
        return None  # encrypted, an unknown compression, or corrupt


def _pdf_texts(data: bytes, budget: _Budget) -> Iterator[str]:
    """The printable runs of each stream of a PDF, inflated when it is deflated."""
    for match in _STREAM.finditer(data):
        end = data.find(b"endstream", match.end())
        if end < 0:
            break
        raw = data[match.end():end]
        allowed = budget.take(INFLATE_LIMIT)
        if not allowed:  # (0 would be no limit to zlib)
            return
        try:
            body = zlib.decompressobj().decompress(raw, allowed)
        except zlib.error:
            body = raw[:allowed]
        budget.left += allowed - len(body)
        yield from printable_runs(body)


def _xml_words(body: bytes) -> str:
    """An XML part's words: paragraphs a line each, table rows as markdown rows."""
    text = body.decode("utf-8", "replace")
    if _ROW_START.search(text):
        text = _ROW.sub(_row_line, text)
    return html.unescape(_ANY_TAG.sub("", _BREAK.sub("\n", text)))


def _row_line(match: re.Match[str]) -> str:
    """A table row (`<w:tr>`, `<a:tr>`) as one markdown row of its cells' words."""
    cells = [" ".join(_ANY_TAG.sub(" ", _BREAK.sub(" ", c.group(1))).split())
             for c in _CELL.finditer(match.group(0))]
    return "\n" + _row([html.unescape(c) for c in cells])


def _tokens(body: bytes) -> Iterator[tuple[bool, str, str, bool, str | None]]:
    """(closing, tag name, attributes, self-closing, text) of each tag or text of XML."""
    for m in _TAG.finditer(body.decode("utf-8", "replace")):
        if m.group(5) is not None:
            yield False, "", "", False, html.unescape(m.group(5))
        elif m.group(2) is not None:
            yield bool(m.group(1)), m.group(2), m.group(3), bool(m.group(4)), None


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n"


def _shared_strings(body: bytes) -> list[str]:
    """An .xlsx's shared strings, in order (each `<si>`'s text runs joined)."""
    strings: list[str] = []
    current: list[str] | None = None
    for closing, name, _attrs, _empty, words in _tokens(body):
        if words is not None and current is not None:
            current.append(words)
        elif name.rsplit(":", 1)[-1] == "si":
            if closing and current is not None:
                strings.append("".join(current))
            current = None if closing else []
    return strings


def _sheet_table(body: bytes, shared: list[str]) -> str:
    """An .xlsx sheet's cells as a markdown table, a row per line, each value resolved and
    in its column (a row's empty cells are left out of the XML)."""
    rows: list[dict[int, str]] = []
    kind, value, column, inside = "", "", 0, False
    for closing, name, attrs, _empty, words in _tokens(body):
        local = name.rsplit(":", 1)[-1] if name else ""
        if words is not None:
            value += words if inside else ""
        elif local == "row" and not closing:
            rows.append({})
        elif local == "c" and not closing:
            typed = _VALUE_TYPE.search(attrs)
            kind, value = (typed.group(1) if typed else ""), ""
            column = _column(attrs, len(rows[-1]) if rows else 0)
        elif local == "c" and rows:
            rows[-1][column] = _cell_value(kind, value, shared)
        elif local in ("v", "t"):
            inside = not closing
    return "".join(_row(_placed(r)) for r in rows if any(r.values()))


def _column(attrs: str, default: int) -> int:
    """A cell's column from its reference (`r="C5"`: 2), else `default`."""
    ref = _REFERENCE.search(attrs)
    if ref is None:
        return default
    index = 0
    for letter in ref.group(1):
        index = index * 26 + ord(letter) - ord("A") + 1
    return index - 1


def _placed(row: dict[int, str]) -> list[str]:
    width = min(max(row, default=-1) + 1, 256)
    return [row.get(i, "") for i in range(width)]


def _cell_value(kind: str, value: str, shared: list[str]) -> str:
    if kind == "s":
        index = int(value) if value.strip().isdigit() else -1
        return shared[index] if 0 <= index < len(shared) else ""
    return value.strip()
