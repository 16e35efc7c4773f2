"""What pdfium tells about a page, read in bulk: text runs with their box, size and
weight, the rules a page draws, and the document's outline.

A run is one text object (one `Tj`/`TJ`): one font, one size, one line. Reading runs
costs a few calls each, where a box per character would cost one call a character and
triple the time of a plain text dump. Their texts are cut from the page's text, read in
one call, by the owners of its characters (`pdf_runs`): pdfium's own text of an object
scans every character of the page again. Objects inside form XObjects are read through
their forms' matrices. Coordinates are turned top-down (y grows down the page).

pdfium's functions are called bare (`_bare`): handles as ctypes gave them, numbers as
ints, pointers made once with byref. Checking arguments against declared types costs
more than most of these calls do.
"""

from __future__ import annotations

import ctypes
import re
import sys
from array import array
from collections.abc import Callable
from functools import partial
from itertools import repeat
from typing import Any

from freshline.materialize.converters import pdf_runs
from freshline.materialize.converters.pdf_layout import OutlineEntry, Rule, Span

_BUFFER_CHARS = 1 << 15
_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demi", "cmbx", "-bd")
_MONO_NAMES = ("mono", "code", "courier", "consol", "cmtt", "menlo", "typewriter")
_FIXED_PITCH = 1  # FPDFFont_GetFlags: the font's glyphs all have one width
_THIN = 2.0  # points: a path this thin in one direction is a rule
_SHORT = 6.0  # points: a rule shorter than this (a plot's tick) bounds no cell
_MAX_DEPTH = 8  # forms nested deeper than this are not read (a hostile file's loop)
_HYPHEN = 2  # the character pdfium makes of a hyphen at a line's end
_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"  # an array's own order
# Right-to-left scripts: pdfium reverses their characters across text objects.
_RIGHT_TO_LEFT = re.compile(
    "[\\u0590-\\u08ff\\ufb1d-\\ufdff\\ufe70-\\ufefe\\U00010800-\\U00010fff\\U0001e800-\\U0001efff]"
)
_CALLS = (
    "FPDFPage_CountObjects", "FPDFPage_GetObject", "FPDFFormObj_CountObjects",
    "FPDFFormObj_GetObject", "FPDFPageObj_GetType", "FPDFPageObj_GetBounds",
    "FPDFPageObj_GetMatrix", "FPDFTextObj_GetText", "FPDFTextObj_GetFontSize",
    "FPDFTextObj_GetFont", "FPDFPath_CountSegments", "FPDFPath_GetDrawMode",
    "FPDFFont_GetBaseFontName", "FPDFFont_GetWeight", "FPDFFont_GetFlags",
    "FPDFText_CountChars", "FPDFText_GetText", "FPDFText_GetUnicode", "FPDFText_GetTextObject",
)
Matrix = tuple[float, float, float, float, float, float]
Box = tuple[float, float, float, float]  # left, bottom, right, top
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
Found = tuple[Any, Matrix]  # a text object's handle, and its forms' matrix
# A Span made as the tuple it is (its class's own constructor is a Python function).
_span: Callable[[tuple[Any, ...]], Span] = partial(tuple.__new__, Span)


class _Handle(ctypes.c_void_p):
    """A handle pdfium gave: ctypes keeps an instance of a subclass as it is (a
    c_void_p would become an int), so it goes back to pdfium unconverted."""


class PageReader:
    """Reads the runs and rules of one document's pages; fonts are looked up once."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.call = {name: _bare(raw, name) for name in _CALLS}
        # The owner of a character is compared and kept as a plain address.
        owner = self.call["FPDFText_GetTextObject"]
        if owner is not None:
            owner.restype = ctypes.c_void_p
        self.call["FPDFTextObj_GetFont"].restype = ctypes.c_void_p  # a key of `_fonts`
        self._buffer = ctypes.create_string_buffer(2 * _BUFFER_CHARS)
        self._fonts: dict[int, tuple[bool, bool]] = {}
        self._box = [ctypes.c_float() for _ in range(4)]
        self._box_at = [ctypes.byref(value) for value in self._box]
        self._matrix = raw.FS_MATRIX()
        self._matrix_at = ctypes.byref(self._matrix)
        self._size = ctypes.c_float()
        self._size_at = ctypes.byref(self._size)

    def page(self, document: Any, index: int) -> tuple[list[Span], list[Rule]]:
        """The text runs and rules of page `index` of a document (pdfium's handle),
        top-down. The page is loaded and closed here, without pypdfium2's helpers: their
        bookkeeping costs as much as reading a small page."""
        raw = self.raw
        page = raw.FPDF_LoadPage(document, index)
        if not page:
            raise _failed("Failed to load page.")
        try:
            textpage = raw.FPDFText_LoadPage(page)
            if not textpage:
                raise _failed("Failed to load text page.")
            try:
                return self.read(page, textpage, raw.FPDF_GetPageHeightF(page))
            finally:
                raw.FPDFText_ClosePage(textpage)
        finally:
            raw.FPDF_ClosePage(page)

    def read(self, page: Any, textpage: Any, height: float) -> tuple[list[Span], list[Rule]]:
        """The text runs and rules of a page and its text page (pdfium's handles)."""
        found, rules = self._objects(page, height)
        texts = self._texts(textpage, [obj for obj, _ in found])
        return self._spans(found, texts, height), rules

    def _objects(self, page: Any, height: float) -> tuple[list[Found], list[Rule]]:
        """The page's text objects and its rules. One loop over every object with the
        library's functions bound once: a page has hundreds of objects."""
        call = self.call
        text_kind, path_kind, form_kind = (
            self.raw.FPDF_PAGEOBJ_TEXT, self.raw.FPDF_PAGEOBJ_PATH, self.raw.FPDF_PAGEOBJ_FORM)
        kind_of, bounds = call["FPDFPageObj_GetType"], call["FPDFPageObj_GetBounds"]
        left, bottom, right, top = self._box
        at_left, at_bottom, at_right, at_top = self._box_at
        found: list[Found] = []
        rules: list[Rule] = []
        stack: list[tuple[Any, Matrix, int]] = [(page, IDENTITY, 0)]
        while stack:
            parent, outer, depth = stack.pop()
            if depth:
                count, get = call["FPDFFormObj_CountObjects"](parent), call["FPDFFormObj_GetObject"]
            else:
                count, get = call["FPDFPage_CountObjects"](parent), call["FPDFPage_GetObject"]
            # map() makes the calls without a line of Python each: objects are many.
            objects = list(map(get, repeat(parent, max(0, count)), range(max(0, count))))
            for obj, kind in zip(objects, map(kind_of, objects), strict=True):
                if kind == text_kind:
                    found.append((obj, outer))  # its box is read once it has text
                elif kind == path_kind:
                    bounds(obj, at_left, at_bottom, at_right, at_top)
                    box = (left.value, bottom.value, right.value, top.value)
                    if outer is not IDENTITY:
                        box = _transform(box, outer)
                    edges = _rules(box, height)
                    rules.extend(_sides(box, height) if edges is None and self._framed(obj)
                                 else edges or [])
                elif kind == form_kind and depth < _MAX_DEPTH:
                    stack.append((obj, _compose(self._matrix_of(obj), outer), depth + 1))
        return found, rules

    def _texts(self, textpage: Any, objects: list[Any]) -> list[str]:
        """Each text object's text: cut from the page's text by its characters' owners, or
        pdfium's own for the object where the page's text cannot be cut so."""
        page = self._page_text(textpage)
        if page is None:
            return [self._object_text(obj, textpage) for obj in objects]
        owner = self.call["FPDFText_GetTextObject"]
        found = pdf_runs.texts(
            page, lambda indices: list(map(owner, repeat(textpage, len(indices)), indices)))
        texts = [found.get(obj.value, "") for obj in objects]
        return [self._object_text(obj, textpage) if text is None else text
                for obj, text in zip(objects, texts, strict=True)]

    def _page_text(self, textpage: Any) -> str | None:
        """The page's text, a character for each of pdfium's as a text object's text has
        it (NUL for one without Unicode, which that leaves out); None where it cannot be
        cut so: a right-to-left script, or a pypdfium2 without FPDFText_GetTextObject."""
        call = self.call
        if call["FPDFText_GetTextObject"] is None:
            return None
        count = call["FPDFText_CountChars"](textpage)
        if count <= 0:
            return ""
        buffer = (ctypes.c_ushort * (2 * count + 1))()  # a pair of units for each, at most
        written = call["FPDFText_GetText"](textpage, 0, count, buffer)
        text = ctypes.string_at(buffer, 2 * max(0, written - 1)).decode("utf-16-le", "replace")
        if len(text) != count or not self._hyphens_only(textpage, text):
            text = self._each_character(textpage, count)  # the page's text left some out
        if not text.isascii() and _RIGHT_TO_LEFT.search(text):
            return None
        return text.replace("\ufffe", "\x02")

    def _hyphens_only(self, textpage: Any, text: str) -> bool:
        """Whether each U+FFFE of the page's text is a hyphen at a line's end (an object's
        text has U+0002 there), not a character without Unicode."""
        unicode_of = self.call["FPDFText_GetUnicode"]
        at = text.find("\ufffe")
        while at >= 0:
            if unicode_of(textpage, at) != _HYPHEN:
                return False
            at = text.find("\ufffe", at + 1)
        return True

    def _each_character(self, textpage: Any, count: int) -> str:
        """The page's text asked a character at a time, as a text object's text has it."""
        unicode_of = self.call["FPDFText_GetUnicode"]
        codes = array("I", [unicode_of(textpage, at) for at in range(count)])
        return codes.tobytes().decode(_UTF32, "replace")  # U+FFFD for a code no character has

    def _object_text(self, obj: Any, textpage: Any) -> str:
        size = ctypes.c_ulong(_BUFFER_CHARS)
        length = self.call["FPDFTextObj_GetText"](obj, textpage, self._buffer, size)
        return ctypes.string_at(self._buffer, max(0, length - 2)).decode("utf-16-le", "replace")

    def _spans(self, found: list[Found], texts: list[str], height: float) -> list[Span]:
        """Runs of the text objects that have text and stand upright."""
        call, m, fonts = self.call, self._matrix, self._fonts
        font_size, font_of, matrix_of, bounds = (
            call["FPDFTextObj_GetFontSize"], call["FPDFTextObj_GetFont"],
            call["FPDFPageObj_GetMatrix"], call["FPDFPageObj_GetBounds"])
        matrix_at, size, size_at = self._matrix_at, self._size, self._size_at
        left, bottom, right, top = self._box
        at_left, at_bottom, at_right, at_top = self._box_at
        spans: list[Span] = []
        for (obj, outer), text in zip(found, texts, strict=True):
            if not text or text.isspace():
                continue
            a, b, c, d = (m.a, m.b, m.c, m.d) if matrix_of(obj, matrix_at) else (1.0, 0.0, 0.0, 1.0)
            if outer is not IDENTITY:
                a, b, c, d = _compose((a, b, c, d, 0.0, 0.0), outer)[:4]
            if (b or c) and (abs(b) > abs(a) or abs(c) > abs(d)):
                continue  # turned on its side: a margin's stamp, not the page's text
            bounds(obj, at_left, at_bottom, at_right, at_top)
            box = (left.value, bottom.value, right.value, top.value)
            if outer is not IDENTITY:
                box = _transform(box, outer)
            font_size(obj, size_at)
            font = font_of(obj) or 0
            bold, mono = fonts.get(font) or self._font(font)
            spans.append(_span((text, box[0], height - box[3], box[2], height - box[1],
                                round(size.value * abs(a * d - b * c) ** 0.5, 1), bold, mono)))
        return spans

    def _matrix_of(self, obj: Any) -> Matrix:
        m = self._matrix
        if not self.call["FPDFPageObj_GetMatrix"](obj, self._matrix_at):
            return IDENTITY
        found = (m.a, m.b, m.c, m.d, m.e, m.f)
        return IDENTITY if found == IDENTITY else found

    def _framed(self, obj: Any) -> bool:
        """Whether a path is a stroked four-sided shape (a cell's frame, when its box is
        not thin: a writer that strokes each cell with `re`)."""
        if self.call["FPDFPath_CountSegments"](obj) not in (4, 5):
            return False
        fill, stroke = ctypes.c_int(), ctypes.c_int()
        drawn = self.call["FPDFPath_GetDrawMode"](obj, ctypes.byref(fill), ctypes.byref(stroke))
        return bool(drawn) and bool(stroke.value)

    def _font(self, font: int) -> tuple[bool, bool]:
        """Whether a font is bold and whether it is monospaced, looked up once."""
        call, handle = self.call, _Handle(font)
        size = ctypes.c_size_t(2 * _BUFFER_CHARS)
        length = call["FPDFFont_GetBaseFontName"](handle, self._buffer, size)
        name = ctypes.string_at(self._buffer, max(0, length - 1)).decode("latin-1").lower()
        bold = call["FPDFFont_GetWeight"](handle) >= 600 or any(n in name for n in _BOLD_NAMES)
        fixed = bool(call["FPDFFont_GetFlags"](handle) & _FIXED_PITCH)
        found = self._fonts[font] = (bold, fixed or any(n in name for n in _MONO_NAMES))
        return found


def _failed(message: str) -> Exception:
    from pypdfium2 import PdfiumError  # what pypdfium2's own helpers raise

    error: Exception = PdfiumError(message)
    return error


def _bare(raw: Any, name: str) -> Any:
    """pdfium's function `name` without declared argument types (the caller passes C
    values: handles, ints, byref pointers, buffers), giving handles as `_Handle`; None
    when this pypdfium2 lacks it."""
    function = getattr(raw, name, None)
    if function is None:
        return None
    handles = (raw.FPDF_PAGE, raw.FPDF_PAGEOBJECT, raw.FPDF_TEXTPAGE, raw.FPDF_FONT)
    copy = type(function)(ctypes.cast(function, ctypes.c_void_p).value)
    copy.restype = _Handle if function.restype in handles else function.restype
    return copy


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
    left, bottom, right, top = box
    a, b, c, d, e, f = m
    if b == 0.0 and c == 0.0:  # scaled and moved, as a form's matrix most often is
        x0, x1, y0, y1 = a * left + e, a * right + e, d * bottom + f, d * top + f
        return (x1 if x1 < x0 else x0, y1 if y1 < y0 else y0,
                x1 if x1 > x0 else x0, y1 if y1 > y0 else y0)
    xs, ys = [], []
    for x, y in ((left, bottom), (left, top), (right, bottom), (right, top)):
        xs.append(a * x + c * y + e)
        ys.append(b * x + d * y + f)
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
