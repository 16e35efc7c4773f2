"""A page's text runs put in reading order (pure).

Runs that share a baseline band and sit close together make a line; a wide gap splits
a band into pieces (two columns, or a table's cells). A page has a gutter when some x
in its middle half is crossed by few lines while several bands hold pieces on both
sides of it: those bands are read left column first, then right, and a band that
crosses the gutter (a title, a wide figure's caption) is read where it stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

WORD_GAP = 0.18  # of the larger font size: a wider gap between runs is a space
MONO_WORD_GAP = 0.35  # the same between monospaced runs (their glyphs' boxes are narrow)
PIECE_GAP = 0.9  # of the font size: a wider gap splits a line into pieces
MONO_PIECE_GAP = 3.0  # the same between monospaced runs (code keeps its spaces)
MIN_SPLIT_BANDS = 3  # bands with pieces on both sides before a gutter is believed
BAND_OVERLAP = 0.4  # of the shorter run's height: runs overlapping more share a band


_X0, _TOP, _X1, _BOTTOM = (attrgetter(name) for name in ("x0", "top", "x1", "bottom"))


class Span(NamedTuple):
    """One run of text: one font and size, on one line; top-down coordinates (a tuple:
    a page makes hundreds)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float
    bold: bool = False
    mono: bool = False


class Rule(NamedTuple):
    """A straight rule the page draws: horizontal at y `at` from `start` to `end`, or
    vertical at x `at`."""

    horizontal: bool
    at: float
    start: float
    end: float


@dataclass(frozen=True)
class OutlineEntry:
    """One bookmark of the document's outline: its title, depth and page."""

    title: str
    depth: int  # 0 for a top-level entry
    page: int  # 0-based; -1 when the bookmark points nowhere


@dataclass(eq=False, slots=True)
class Line:
    """Runs read as one line of one column, left to right, with its measures."""

    spans: list[Span]
    x0: float
    top: float
    x1: float
    bottom: float
    size: float  # the size most of its characters have
    largest: float  # the largest size of its letters (a small-caps heading's capitals)
    bold: bool
    mono: bool
    text: str  # the runs joined, a space where the gap between two is as wide as one
    column: int = 0  # 0: the page's full width; 1, 2: left or right of its gutter


def make_line(spans: list[Span]) -> Line:
    """A line of `spans` (left to right), measured."""
    if len(spans) == 1:  # most lines of a page are one run
        return _one_run(spans)
    weights: dict[float, int] = {}
    largest = 0.0
    bold = mono = True
    for s in spans:
        text, size = s.text, s.size
        weights[size] = weights.get(size, 0) + len(text)
        if not text.isspace():
            mono = mono and s.mono
            if text.upper() != text.lower():  # has letters (a C-speed test)
                largest = size if size > largest else largest
                bold = bold and s.bold
    size = max(weights, key=lambda size: (weights[size], size)) if len(weights) > 1 else size
    return Line(spans, min(map(_X0, spans)), min(map(_TOP, spans)),
                max(0.0, max(map(_X1, spans))), max(0.0, max(map(_BOTTOM, spans))),
                size, largest, bold, mono, _joined(spans, mono))


def _one_run(spans: list[Span]) -> Line:
    span = spans[0]
    text, size = span.text, span.size
    blank = text.isspace()
    letters = not blank and text.upper() != text.lower()
    mono = blank or span.mono
    joined = text.rstrip() if mono else " ".join(text.split())
    return Line(spans, span.x0, span.top, max(0.0, span.x1), max(0.0, span.bottom), size,
                max(0.0, size) if letters else 0.0, span.bold or not letters, mono, joined)


def _joined(spans: list[Span], mono: bool) -> str:
    """The runs' texts, a space between two where the gap is as wide as one."""
    previous = spans[0]
    parts = [previous.text]
    for span in spans[1:]:
        text = span.text
        if not (previous.text[-1:].isspace() or text[:1].isspace()):
            gap = MONO_WORD_GAP if previous.mono and span.mono else WORD_GAP
            larger = span.size if span.size > previous.size else previous.size
            if span.x0 - previous.x1 > gap * larger:
                parts.append(" ")
        parts.append(text)
        previous = span
    return "".join(parts).rstrip() if mono else " ".join("".join(parts).split())


def lines(spans: Iterable[Span]) -> list[Line]:
    """The page's lines in reading order, each marked with its column."""
    bands = [_pieces(band) for band in _bands(spans)]
    gutter = _gutter([piece for band in bands for piece in band], bands)
    if gutter is None:
        return [piece for band in bands for piece in band]
    ordered: list[Line] = []
    held: list[list[Line]] = []  # consecutive bands that split at the gutter
    for band in bands:
        if any(p.x0 < gutter < p.x1 for p in band):
            ordered.extend(_columns(held, gutter))
            held = []
            ordered.extend(band)
        else:
            held.append(band)
    ordered.extend(_columns(held, gutter))
    return ordered


def _columns(bands: list[list[Line]], gutter: float) -> list[Line]:
    left = [p for band in bands for p in band if p.x1 <= gutter]
    right = [p for band in bands for p in band if p.x0 >= gutter]
    for piece in left:
        piece.column = 1
    for piece in right:
        piece.column = 2
    return left + right


def _bands(spans: Iterable[Span]) -> list[list[Span]]:
    """Runs grouped by the baseline band they share, top to bottom. A band is as tall as
    its largest run, so a superscript joins its line and never bridges two lines."""
    bands: list[list[Span]] = []
    band: list[Span] = []
    top = bottom = 0.0  # the band's main run's
    size = float("inf")
    for span in sorted(spans, key=lambda s: (s.top + s.bottom, s.x0)):
        # min() and max() spelled out: this runs once for every run of a document.
        low, high = span.top, span.bottom
        overlap = (high if high < bottom else bottom) - (low if low > top else top)
        shorter = high - low if high - low < bottom - top else bottom - top
        if band and overlap >= BAND_OVERLAP * (shorter if shorter > 0.1 else 0.1):
            band.append(span)
            if span.size > size:
                top, bottom, size = low, high, span.size
            continue
        band = [span]
        bands.append(band)
        top, bottom, size = low, high, span.size
    return bands


def _pieces(band: Sequence[Span]) -> list[Line]:
    """A band split into lines where the gap between runs is wide. A listing's line
    number (digits alone, just left of code) is not part of the text."""
    if len(band) == 1:
        return [make_line(list(band))]
    ordered = sorted(band, key=_X0)
    last = ordered[0]
    piece = [last]
    pieces = [piece]
    right_edge = last.x1
    for span in ordered[1:]:
        gap = MONO_PIECE_GAP if last.mono and span.mono else PIECE_GAP
        if span.x0 - right_edge <= gap * span.size:
            piece.append(span)
            if span.x1 > right_edge:
                right_edge = span.x1
        else:
            if span.mono and _line_number(piece):
                pieces.pop()
            piece = [span]
            pieces.append(piece)
            right_edge = span.x1
        last = span
    return [make_line(piece) for piece in pieces]


def _line_number(piece: list[Span]) -> bool:
    return len(piece) == 1 and not piece[0].mono and piece[0].text.strip().isdigit()


def _gutter(pieces: Sequence[Line], bands: Sequence[Sequence[Line]]) -> float | None:
    """The x between two columns, or None for a page read in one."""
    if len(pieces) < 2 * MIN_SPLIT_BANDS:
        return None
    found = _least_crossed(pieces)
    if found is None:
        return None
    crossing, gutter = found
    split = sum(
        1 for band in bands
        if any(p.x1 <= gutter for p in band) and any(p.x0 >= gutter for p in band)
        and not any(p.x0 < gutter < p.x1 for p in band)
    )
    return gutter if split >= MIN_SPLIT_BANDS and split > crossing else None


def _least_crossed(pieces: Sequence[Line]) -> tuple[int, float] | None:
    """How many pieces cross the least-crossed x of the middle half, and the middle of
    the widest stretch crossed that little (a sweep over the pieces' edges)."""
    left, right = min(p.x0 for p in pieces), max(p.x1 for p in pieces)
    low, high = left + (right - left) / 4, right - (right - left) / 4
    edges = sorted([(p.x0, 1) for p in pieces] + [(p.x1, -1) for p in pieces])
    crossing, position = 0, left
    best: tuple[int, float, float] | None = None  # (crossing, -width, middle)
    for x, step in edges:
        start = low if low > position else position
        end = high if high < x else x
        if end > start:
            candidate = (crossing, start - end, (start + end) / 2)
            if best is None or candidate < best:
                best = candidate
        crossing += step
        position = x
    return (best[0], best[2]) if best is not None else None
