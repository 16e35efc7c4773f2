"""Marker characters that a library leaves inside words, taken out (pure).

pdfium writes a hyphen at a line's end as U+FFFE in a page's text and as U+0002 in a text
object's: `manip\\ufffeulation` is one word a search must find. A soft hyphen (U+00AD)
in DOCX, PPTX or HTML marks where a word may break, and a byte-order mark (U+FEFF) inside
a text joins nothing: neither is part of a word either.
"""

from __future__ import annotations

import re

HYPHEN_MARKERS = "\ufffe\x02"
INVISIBLE = "\u00ad\ufeff"
_BROKEN = re.compile(f"[{HYPHEN_MARKERS}][ \\t]*(?:\\r?\\n[ \\t]*)?(\\w?)")
_INVISIBLE = re.compile(f"[{INVISIBLE}]")
_ANY = re.compile(f"[{HYPHEN_MARKERS}{INVISIBLE}]")


def unmark(text: str) -> str:
    """`text` with hyphen markers joined into their words and invisible marks dropped.

    A marker before a lower-case letter joins the two halves (`manip`+`ulation`); before
    a capital or a digit the hyphen was a real one (`IEEE-754`) and is written as `-`.
    """
    if _ANY.search(text) is None:
        return text
    return _INVISIBLE.sub("", _BROKEN.sub(_join, text))


def _join(match: re.Match[str]) -> str:
    follower = match.group(1)
    if follower and not follower.islower():
        return "-" + follower
    return follower
