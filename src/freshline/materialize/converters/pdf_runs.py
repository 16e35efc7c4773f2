"""Which characters of a page each text object drew, found with few questions, and each
object's text cut from the page's (pure).

pdfium keeps a page's characters in reading order, each pointing at the text object
that drew it (none for a space or line break it generated between two objects), and
answers for one character a call; its text of one object costs a scan of every
character of the page, for each object. An object's characters lie together, so its
first and last are enough, and few are asked: both ends of each line (a line whose ends
have one owner is all that owner's); in the other lines, words' starts by bisection (a
run seldom starts inside a word); where two neighbouring words' owners differ, the
first word's last character and the spaces after it; where a word's own ends differ, its
characters by bisection. Questions go in batches, one round of a bisection at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

Owner = int | None  # a text object's address; None: a character pdfium generated
Ask = Callable[[list[int]], list[Owner]]  # the owners of characters, by index


def texts(text: str, ask: Ask) -> dict[int, str | None]:
    """Each owner's text, as pdfium gives a text object's: its characters of `text` (the
    page's, a character for each of pdfium's, NUL for one without Unicode) but NULs, and
    a space that follows them. An owner whose characters are interleaved with another's
    maps to None: ask pdfium."""
    spans = extents(text, ask)
    found: dict[int, str | None] = {}
    unmapped = "\x00" in text
    for owner, (first, last) in spans.items():
        piece = text[first:last + 1].replace("\x00", "") if unmapped else text[first:last + 1]
        found[owner] = piece + " " if text[last + 1:last + 2] == " " else piece
    for owner in _interleaved(spans):
        found[owner] = None
    return found


def extents(text: str, ask: Ask) -> dict[int, tuple[int, int]]:
    """The first and last index of each owner's characters among the page's."""
    lines = _lines(text)
    edges = [at for line in lines for at in line]
    known = dict(zip(edges, ask(edges), strict=True))
    pending = _unresolved(lines, known)
    while pending:  # a round of bisection over every stretch still unresolved
        middles = [_middle(text, low, high) for low, high in pending]
        known.update(zip(middles, ask(middles), strict=True))
        pending = _unresolved([half for (low, high), middle in zip(pending, middles, strict=True)
                               for half in ((low, middle), (middle, high))], known)
    points = sorted(known)
    owners = [known[at] for at in points]
    first = dict(zip(reversed(owners), reversed(points), strict=True))
    last = dict(zip(owners, points, strict=True))
    return {owner: (start, last[owner]) for owner, start in first.items() if owner is not None}


def _lines(text: str) -> list[tuple[int, int]]:
    """The first and last index of each line of `text` (pdfium ends one with CR LF, a
    line break no object drew)."""
    found = []
    start = 0
    for line in text.split("\r\n"):
        if line:
            found.append((start, start + len(line) - 1))
        start += len(line) + 2
    return found


def _unresolved(stretches: list[tuple[int, int]], known: dict[int, Owner]) -> list[
        tuple[int, int]]:
    """The stretches that hold more than their two (asked) ends, and whose ends' owners
    differ or were generated: a stretch whose ends have one owner is all that owner's."""
    return [(low, high) for low, high in stretches if high - low > 1
            and (known[low] is None or known[low] != known[high])]


def _middle(text: str, low: int, high: int) -> int:
    """Where to ask between `low` and `high`: just after a hyphen at a line's end (pdfium
    joins the two lines, each most often its own run); else the start of the word
    nearest the middle (runs seldom part inside a word); else the end of the word at
    `low`, when spaces follow it; else the middle."""
    hyphen = text.find("\x02", low, high - 1)
    if hyphen >= 0:
        return hyphen + 1
    middle = (low + high) // 2
    space = text.rfind(" ", low, middle)
    if space < 0:
        space = text.find(" ", middle, high - 1)
    if space >= 0 and text[space + 1] != " ":
        return space + 1
    end = low + len(text[low:high].rstrip()) - 1
    return end if low < end < high - 1 else middle


def _interleaved(spans: dict[int, tuple[int, int]]) -> set[int]:
    """Owners whose first-to-last stretch overlaps another's."""
    found: set[int] = set()
    reach, holder = -1, 0
    for owner, (first, last) in sorted(spans.items(), key=itemgetter(1)):
        if first <= reach:
            found.update((owner, holder))
        if last > reach:
            reach, holder = last, owner
    return found
