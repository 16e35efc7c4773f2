"""What pdfium tells about a page, read in bulk: text runs with their box, size and
weight, the rules a page draws, and the document's outline.

A run is one text object (one `Tj`/`TJ`): one font, one size, one line. Reading runs
costs a few calls each, where a box per character would cost one call a character and
triple the time of a plain text dump. Objects inside form XObjects are read through
their forms' matrices. Coordinates are turned top-down (y grows down the page).
"""

from __future__ import annotations

import ctypes
from typing import Any

from freshline.materialize.converters.pdf_layout import OutlineEntry, Rule, Span

_BUFFER_CHARS = 1 << 15
_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demi", "cmbx", "-bd")
_MONO_NAMES = ("mono", "code", "courier", "consol", "cmtt", "menlo", "typewriter")
_FIXED_PITCH = 1  # FPDFFont_GetFlags: the font's glyphs all have one width
_THIN = 2.0  # points: a path this thin in one direction is a rule
_SHORT = 6.0  # points: a rule shorter than this (a plot's tick) bounds no cell
_MAX_DEPTH = 8  # forms nested deeper than this are not read (a hostile file's loop)
Matrix = tuple[float, float, float, float, float, float]
Box = tuple[float, float, float, float]  # left, bottom, right, top
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


class PageReader:
    """Reads the runs and rules of one document's pages; fonts are looked up once."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._buffer = ctypes.create_string_buffer(2 * _BUFFER_CHARS)
        self._wide = ctypes.cast(self._buffer, ctypes.POINTER(ctypes.c_ushort))
        self._fonts: dict[int, tuple[bool, bool]] = {}
        self._box = [ctypes.c_float() for _ in range(4)]
        self._matrix = raw.FS_MATRIX()
        self._size = ctypes.c_float()

    def read(self, page: Any, textpage: Any, height: float) -> tuple[list[Span], list[Rule]]:
        """The page's text runs and rules, top-down. One loop over every object with the
        library's functions bound once: a page has hundreds of objects, a paper thousands
        of pages' worth, and this loop is most of a conversion's time."""
        raw = self.raw
        text_kind, path_kind, form_kind = (
            raw.FPDF_PAGEOBJ_TEXT, raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_FORM)
        kind_of, bounds, get_text = (
            raw.FPDFPageObj_GetType, raw.FPDFPageObj_GetBounds, raw.FPDFTextObj_GetText)
        font_size, font_of, matrix_of = (
            raw.FPDFTextObj_GetFontSize, raw.FPDFTextObj_GetFont, raw.FPDFPageObj_GetMatrix)
        left, bottom, right, top = self._box
        m, size, buffer, wide = self._matrix, self._size, self._buffer, self._wide
        fonts = self._fonts
        spans: list[Span] = []
        rules: list[Rule] = []
        stack: list[tuple[Any, Matrix, int]] = [(page.raw, IDENTITY, 0)]
        while stack:
            parent, outer, depth = stack.pop()
            if depth:
                count, get = raw.FPDFFormObj_CountObjects(parent), raw.FPDFFormObj_GetObject
            else:
                count, get = raw.FPDFPage_CountObjects(parent), raw.FPDFPage_GetObject
            for index in range(max(0, count)):
                obj = get(parent, index)
                kind = kind_of(obj)
                if kind == form_kind:
                    if depth < _MAX_DEPTH:
                        stack.append((obj, _compose(self._matrix_of(obj), outer), depth + 1))
                    continue
                if kind != text_kind and kind != path_kind:
                    continue
                bounds(obj, left, bottom, right, top)
                box = (left.value, bottom.value, right.value, top.value)
                if outer is not IDENTITY:
                    box = _transform(box, outer)
                if kind == path_kind:
                    found = _rules(box, height)
                    rules.extend(_sides(box, height) if found is None and self._framed(obj)
                                 else found or [])
                    continue
                length = get_text(obj, textpage.raw, wide, _BUFFER_CHARS)
                text = ctypes.string_at(buffer, max(0, length - 2)).decode("utf-16-le", "replace")
                if not text or text.isspace():
                    continue
                own = (m.a, m.b, m.c, m.d) if matrix_of(obj, m) else (1.0, 0.0, 0.0, 1.0)
                if outer is not IDENTITY:
                    own = _compose((*own, 0.0, 0.0), outer)[:4]
                if abs(own[1]) > abs(own[0]) or abs(own[2]) > abs(own[3]):
                    continue  # turned on its side: a margin's stamp, not the page's text
                font_size(obj, size)
                scale = abs(own[0] * own[3] - own[1] * own[2]) ** 0.5
                font = font_of(obj)
                key = ctypes.c_void_p.from_buffer(font).value or 0
                style = fonts.get(key) or self._font(font, key)
                spans.append(Span(text, box[0], height - box[3], box[2], height - box[1],
                                  round(size.value * scale, 1), style[0], style[1]))
        return spans, rules

    def _matrix_of(self, obj: Any) -> Matrix:
        m = self._matrix
        if not self.raw.FPDFPageObj_GetMatrix(obj, m):
            return IDENTITY
        found = (m.a, m.b, m.c, m.d, m.e, m.f)
        return IDENTITY if found == IDENTITY else found

    def _framed(self, obj: Any) -> bool:
        """Whether a path is a stroked four-sided shape (a cell's frame, when its box is
        not thin: a writer that strokes each cell with `re`)."""
        raw = self.raw
        if raw.FPDFPath_CountSegments(obj) not in (4, 5):
            return False
        fill, stroke = ctypes.c_int(), ctypes.c_int()
        return bool(raw.FPDFPath_GetDrawMode(obj, fill, stroke)) and bool(stroke.value)

    def _font(self, font: Any, key: int) -> tuple[bool, bool]:
        """Whether a font is bold and whether it is monospaced, looked up once."""
        raw = self.raw
        length = raw.FPDFFont_GetBaseFontName(font, self._buffer, 2 * _BUFFER_CHARS)
        name = ctypes.string_at(self._buffer, max(0, length - 1)).decode("latin-1").lower()
        bold = raw.FPDFFont_GetWeight(font) >= 600 or any(n in name for n in _BOLD_NAMES)
        fixed = bool(raw.FPDFFont_GetFlags(font) & _FIXED_PITCH)
        found = self._fonts[key] = (bold, fixed or any(n in name for n in _MONO_NAMES))
        return found


def _rules(box: Box, height: float) -> list[Rule] | None:
    """A path thin in one direction as a rule (none when short: a plot's tick); None for
    a box big enough to frame a cell (its sides count if it is stroked)."""
    left, bottom, right, top = box
    top_down, bottom_down = height - top, height - bottom
    if right - left < _THIN:
        long = top - bottom > _SHORT
        return [Rule(False, (left + right) / 2, top_down, bottom_down)] if long else []
    if top - bottom < _THIN:
        long = right - left > _SHORT
        return [Rule(True, (top_down + bottom_down) / 2, left, right)] if long else []
    return None if right - left > _SHORT and top - bottom > _SHORT else []


def _sides(box: Box, height: float) -> list[Rule]:
    left, bottom, right, top = box
    top_down, bottom_down = height - top, height - bottom
    return [Rule(True, top_down, left, right), Rule(True, bottom_down, left, right),
            Rule(False, left, top_down, bottom_down), Rule(False, right, top_down, bottom_down)]


def _compose(inner: Matrix, outer: Matrix) -> Matrix:
    if outer is IDENTITY:
        return inner
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D,
            e * A + f * C + E, e * B + f * D + F)


def _transform(box: Box, m: Matrix) -> Box:
    if m is IDENTITY:
        return box
    left, bottom, right, top = box
    xs, ys = [], []
    for x, y in ((left, bottom), (left, top), (right, bottom), (right, top)):
        xs.append(m[0] * x + m[2] * y + m[4])
        ys.append(m[1] * x + m[3] * y + m[5])
    return min(xs), min(ys), max(xs), max(ys)


def outline(pdf: Any, raw: Any) -> list[OutlineEntry]:
    """The document's bookmarks in order, each with its depth and 0-based page."""
    found: list[OutlineEntry] = []
    buffer = ctypes.create_string_buffer(2048)
    seen: set[int] = set()

    def walk(bookmark: Any, depth: int) -> None:
        while bookmark and depth < 16 and len(found) < 10_000:
            address = ctypes.cast(bookmark, ctypes.c_void_p).value or 0
            if address in seen:  # a cyclic outline
                return
            seen.add(address)
            length = raw.FPDFBookmark_GetTitle(bookmark, buffer, len(buffer))
            size = max(0, min(length, len(buffer)) - 2)
            title = ctypes.string_at(buffer, size).decode("utf-16-le", "replace")
            dest = raw.FPDFBookmark_GetDest(pdf.raw, bookmark)
            page = raw.FPDFDest_GetDestPageIndex(pdf.raw, dest) if dest else -1
            found.append(OutlineEntry(" ".join(title.split()), depth, page))
            walk(raw.FPDFBookmark_GetFirstChild(pdf.raw, bookmark), depth + 1)
            bookmark = raw.FPDFBookmark_GetNextSibling(pdf.raw, bookmark)

    walk(raw.FPDFBookmark_GetFirstChild(pdf.raw, None), 0)
    return found
