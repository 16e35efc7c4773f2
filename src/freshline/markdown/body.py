"""Inline `#tags` of a note body, by Obsidian's rules, in time linear in the note's length.

A tag is `#` at the start of a line or after whitespace, then tag characters. What is not
text does not count: fenced code blocks (``` and ~~~, also inside blockquotes, callouts
and list items), inline code, `$$ math $$` and `$math$`, `%% comments %%` and `<!-- -->`
comments, wiki links `[[...]]` and markdown link targets `](...)`. A backslash escapes
the character after it; an escaped backtick run is text, not a code delimiter.

Linear by construction: one pass over the lines for fences, then one left-to-right scan
of the rest. Every regular expression here is searched forward from where the last match
ended and repeats only at its very end, so no match attempt backtracks; every search for
a closing delimiter goes through `_Next` or `_Closers`, which only move forward and
remember their answer, so no stretch of text is searched twice for the same thing. (The
old URL pattern, a repeat followed by `://`, was retried from every letter of a long word:
quadratic.)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# Stands for a hidden stretch (code, math, a comment, a link target): not whitespace, so
# a `#` right after one does not start a tag.
HIDDEN = "\x00"

# Where a delimiter may start: searching for one character of a set is a fast loop in C,
# where searching for the alternation below is not.
_START = re.compile(r"[\\`$%<\[\]]")
# The scanner's delimiters, matched where `_START` stopped: an escaped backtick run, any
# other escape, a backtick run, math, comments, wiki links and link targets.
_TOKEN = re.compile(r"\\`+|\\.|`+|\$\$|\$|%%|<!--|\[\[|\]\(", re.DOTALL)
_BACKTICKS = re.compile(r"\\`+|\\.|`+", re.DOTALL)  # tokenized as `_TOKEN` does
_DOLLARS = re.compile(r"\\.|\$\$|\$", re.DOTALL)
_TAG_WORD = re.compile(r"#\S+")  # a tag only where the `#` starts a word: checked by hand
_ASCII_TAG = re.compile(r"[A-Za-z0-9_/-]*")


def fence_free_lines(body: str) -> str:
    """`body` with every line of a fenced code block emptied, and blank lines emptied."""
    kept: list[str] = []
    fence = ""  # the opening run of the fence we are in: "```", "~~~~", ...
    depth = 0  # how many `>` the fence's lines are quoted with
    for line in body.split("\n"):
        content = line.lstrip(" \t>")
        quotes = line.count(">", 0, len(line) - len(content))
        if fence:
            if quotes >= depth:
                if content.rstrip().lstrip(fence[0]) == "" and len(content.rstrip()) >= len(fence):
                    fence = ""
                kept.append("")
                continue
            fence = ""  # the blockquote holding the fence ended, and the fence with it
        opening = _fence_opening(content)
        if opening:
            fence, depth = opening, quotes
            kept.append("")
        else:
            kept.append(line if content.strip() else "")
    return "\n".join(kept)


def _fence_opening(content: str) -> str:
    if not content.startswith(("```", "~~~")):
        return ""
    rest = content.lstrip(content[0])
    if content[0] == "`" and "`" in rest:
        return ""  # a backtick fence's info string holds no backtick: this is inline code
    return content[: len(content) - len(rest)]


class _Next:
    """Where `needle` next occurs in `text` at or after a position that only moves forward.

    Remembers the last answer, so a run of queries costs one pass over the text in all.
    """

    def __init__(self, text: str, needle: str) -> None:
        self.text, self.needle = text, needle
        self.found = -1  # the last answer: an occurrence, or len(text) for none

    def at_or_after(self, pos: int) -> int:
        """The next occurrence's index, or len(text) if there is none."""
        if self.found < pos:
            hit = self.text.find(self.needle, pos)
            self.found = hit if hit >= 0 else len(self.text)
        return self.found


class _Closers:
    """Candidate closing delimiters, in order, with a cursor that only moves forward."""

    def __init__(self, positions: list[int]) -> None:
        self.positions = positions
        self.i = 0

    def after(self, pos: int) -> int | None:
        """The first candidate after `pos`, or None."""
        while self.i < len(self.positions) and self.positions[self.i] <= pos:
            self.i += 1
        return self.positions[self.i] if self.i < len(self.positions) else None


def _code_closers(text: str) -> dict[int, _Closers]:
    """Unescaped backtick runs by length: a code span closes on the next run of its length."""
    runs: dict[int, list[int]] = {}
    if "`" in text:
        for m in _BACKTICKS.finditer(text):
            if m[0][0] == "`":  # not an escaped run, not an escape
                runs.setdefault(len(m[0]), []).append(m.start())
    return {n: _Closers(starts) for n, starts in runs.items()}


def _math_closers(text: str) -> _Closers:
    """Single `$`s that can close inline math: after a non-space, not before a digit."""
    ends: list[int] = []
    if "$" in text:
        for m in _DOLLARS.finditer(text):
            p = m.start()
            after = text[p + 1 : p + 2]
            if m[0] == "$" and p and not text[p - 1].isspace() and not after.isdigit():
                ends.append(p)
    return _Closers(ends)


class _Scanner:
    """One left-to-right pass that hides code, math, comments and link targets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.code = _code_closers(text)
        self.math = _math_closers(text)
        self.next: dict[str, _Next] = {}
        self.pieces: list[str] = []
        self.shown = 0  # text before this index is already in `pieces` (or hidden)
        self.handlers: dict[str, Callable[[int, int], int | None]] = {
            "$$": self._display_math,
            "$": self._inline_math,
            "%%": self._percent_comment,
            "<!--": self._html_comment,
            "[[": self._wiki_link,
            "](": self._link_target,
        }

    def find(self, needle: str, pos: int) -> int:
        if needle not in self.next:
            self.next[needle] = _Next(self.text, needle)
        return self.next[needle].at_or_after(pos)

    def visible(self) -> str:
        text, pos = self.text, 0
        while (start_at := _START.search(text, pos)) is not None:
            start = start_at.start()
            m = _TOKEN.match(text, start)
            if m is None:
                pos = start + 1
                continue
            pos = m.end()
            token = m[0]
            if token[0] == "`":
                end = self._code_span(start, len(token))
            elif token[0] == "\\":
                continue
            else:
                end = self.handlers[token](start, pos)
            if end is not None:
                self.pieces += [text[self.shown : start], HIDDEN]
                self.shown = pos = end
        self.pieces.append(text[self.shown :])
        return "".join(self.pieces)

    def _paragraph_end(self, pos: int) -> int:
        return self.find("\n\n", pos)

    def _code_span(self, start: int, n: int) -> int | None:
        closers = self.code.get(n)
        close = closers.after(start) if closers else None
        if close is None or close > self._paragraph_end(start):
            return None
        return close + n

    def _display_math(self, start: int, pos: int) -> int | None:
        close = self.find("$$", pos)
        return close + 2 if close < len(self.text) else None

    def _inline_math(self, start: int, pos: int) -> int | None:
        if pos >= len(self.text) or self.text[pos].isspace():
            return None
        close = self.math.after(start)
        if close is None or close > self._paragraph_end(start):
            return None
        return close + 1

    def _percent_comment(self, start: int, pos: int) -> int:
        # An unclosed comment runs to the end of the note, as Obsidian shows it.
        return min(self.find("%%", pos) + 2, len(self.text))

    def _html_comment(self, start: int, pos: int) -> int:
        return min(self.find("-->", pos) + 3, len(self.text))

    def _wiki_link(self, start: int, pos: int) -> int | None:
        close = self.find("]", pos)
        if close < self.find("\n", pos) and self.text.startswith("]]", close):
            return close + 2
        return None

    def _link_target(self, start: int, pos: int) -> int | None:
        close = self.find(")", pos)
        return close + 1 if close < self.find("\n", pos) else None


def tag_words(body: str) -> list[str]:
    """The tag candidates of a body (LF line endings, front matter removed): the text after
    each `#` that starts a word, up to the first character a tag cannot hold."""
    if "#" not in body:  # every tag starts with "#": most notes skip the costly passes
        return []
    visible = _Scanner(fence_free_lines(body)).visible()
    return [
        _tag_prefix(m[0][1:])
        for m in _TAG_WORD.finditer(visible)
        if m.start() == 0 or visible[m.start() - 1].isspace()
    ]


def is_tag_char(c: str) -> bool:
    """Whether `c` may appear in a tag: letters, digits, `_`, `-`, `/`, non-ASCII symbols."""
    if c in "_-/":
        return True
    if c.isascii():
        return c.isalnum()
    if c == "\ufffd":
        return False  # the stand-in for undecodable bytes
    return unicodedata.category(c)[0] not in "PZC"


def _tag_prefix(word: str) -> str:
    if word.isascii():
        m = _ASCII_TAG.match(word)
        return m[0] if m else ""
    for i, c in enumerate(word):
        if not is_tag_char(c):
            return word[:i]
    return word
