"""Which characters of a page each text object drew, found with few questions, and each
object's text cut from the page's (pure).

pdfium keeps a page's characters in reading order, each pointing at the text object
that drew it (none for a space or line break it generated between two objects), and
answers for one character a call; its text of one object costs a scan of every
character of the page, for each object. An object's characters lie together, so its
first and last are enough, and they are found with few calls: the owner of each word's
first character is asked (a run seldom starts inside a word); where two words' owners
differ, the first word's last character and the spaces after it are asked; where that
word's own characters differ, its stretch is bisected.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Owner = int | None  # a text object's address; None: a character pdfium generated
OwnerAt = Callable[[int], Owner]
_WORD = re.compile(r"\S+")
_BREAK = "\r\n"  # pdfium's own line break between two objects: no object drew it


def texts(text: str, owner_at: OwnerAt) -> dict[int, str | None]:
    """Each owner's text, as pdfium gives a text object's: its characters of `text` (the
    page's, a character for each of pdfium's, NUL for one without Unicode) but NULs, and
    a space that follows them. An owner whose characters are interleaved with another's
    maps to None: ask pdfium."""
    spans = extents(text, owner_at)
    found: dict[int, str | None] = {}
    unmapped = "\x00" in text
    for owner, (first, last) in spans.items():
        piece = text[first:last + 1].replace("\x00", "") if unmapped else text[first:last + 1]
        found[owner] = piece + " " if text[last + 1:last + 2] == " " else piece
    for owner in _interleaved(spans):
        found[owner] = None
    return found


def extents(text: str, owner_at: OwnerAt) -> dict[int, tuple[int, int]]:
    """The first and last index of each owner's characters among the page's."""
    lines = _lines(text)
    known = _ask(owner_at, [at for line in lines for at in line])
    known.update(_ask(owner_at, [
        at for first, last in lines if known[first] != known[last] or known[first] is None
        for at in _word_starts(text, first, last)
    ]))
    _ask_between(text, owner_at, known)
    points = sorted(known)
    owners = [known[at] for at in points]
    first = dict(zip(reversed(owners), reversed(points), strict=True))
    last = dict(zip(owners, points, strict=True))
    return {owner: (start, last[owner]) for owner, start in first.items() if owner is not None}


def _lines(text: str) -> list[tuple[int, int]]:
    """The first and last index of each line of `text` (pdfium ends one with CR LF)."""
    found = []
    start = 0
    for line in text.split(_BREAK):
        if line:
            found.append((start, start + len(line) - 1))
        start += len(line) + 2
    return found


def _word_starts(text: str, first: int, last: int) -> list[int]:
    starts = [match.start() for match in _WORD.finditer(text, first, last + 1)]
    return starts[1:] if starts and starts[0] == first else starts


def _ask(owner_at: OwnerAt, indices: list[int]) -> dict[int, Owner]:
    return dict(zip(indices, [owner_at(at) for at in indices], strict=True))


def _ask_between(text: str, owner_at: OwnerAt, known: dict[int, Owner]) -> None:
    """Asks between two asked words whose owners differ: the first word's last character
    and the spaces after it, then what a bisection of the word needs."""
    points = sorted(known)
    owners = [known[at] for at in points]
    gaps = [i for i in range(1, len(points)) if owners[i] != owners[i - 1] or owners[i] is None]
    ends = [points[i - 1] + len(text[points[i - 1]:points[i]].rstrip()) - 1 for i in gaps]
    known.update(_ask(owner_at, [
        at for i, end in zip(gaps, ends, strict=True)
        for at in range(max(end, points[i - 1] + 1), points[i]) if text[at] not in _BREAK
    ]))
    for i, end in zip(gaps, ends, strict=True):
        start, owner = points[i - 1], owners[i - 1]
        if end > start and (owner is None or known[end] != owner):
            _bisect(owner_at, (start, owner), (end, known[end]), known)


def _bisect(owner_at: OwnerAt, low: tuple[int, Owner], high: tuple[int, Owner],
            known: dict[int, Owner]) -> None:
    """Asks between two asked characters until each change of owner lies between two
    neighbours: a stretch whose ends have one owner is all that owner's."""
    stack = [(*low, *high)]
    while stack:
        start, first, stop, final = stack.pop()
        if stop - start > 1 and (first != final or first is None):
            middle = (start + stop) // 2
            owner = known[middle] = owner_at(middle)
            stack.append((start, first, middle, owner))
            stack.append((middle, owner, stop, final))


def _interleaved(spans: dict[int, tuple[int, int]]) -> set[int]:
    """Owners whose first-to-last stretch overlaps another's."""
    found: set[int] = set()
    reach, holder = -1, 0
    for owner, (first, last) in sorted(spans.items(), key=lambda item: item[1]):
        if first <= reach:
            found.update((owner, holder))
        if last > reach:
            reach, holder = last, owner
    return found
