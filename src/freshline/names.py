"""Names as a block shows them, and back (pure).

A block names files as they are on disk, so that a name copied from it reaches the file:
`Q&A <draft>.md` is shown as it is. Only what could break the block is escaped, each with
a backslash escape a shell's `$'…'` quoting reads back as the very bytes on disk:

- a backslash itself, `\\\\` (so every other backslash starts an escape);
- control characters (`\\n`, `\\r`, `\\t`, other ASCII ones as `\\x1b`, C1 ones as
  `\\u0085`), line and paragraph separators (`\\u2028`), format characters such as
  bidirectional controls (`\\u202e`) and zero-width ones (`\\u200b`): none may start a line
  or hide text;
- the bytes of a name that is not UTF-8 (`\\xff`: the scan keeps them as surrogate
  escapes);
- the `<` of anything that could open or close a freshline block (`<project_context…`,
  `</project_context…`, in any case), as `\\x3c`.

`read_back` turns a shown name into the name again (the workspace-relative or absolute
path a reader then resolves): readers given a path that does not exist as written try it
read back. `read_back(escape(s)) == s` for every string.
"""

from __future__ import annotations

import re
import unicodedata

ESCAPE = "\\"
# control, format (bidi controls, zero-width characters), surrogate, line and paragraph
# separator: none of them should reach a model as they are
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_BYTE_ESCAPES = range(0xDC80, 0xDD00)  # os.fsdecode's stand-ins for undecodable bytes
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", ESCAPE: ESCAPE * 2}
_TAG = re.compile(r"<(?=/?project_context)", re.IGNORECASE)  # a block's tag could start here
_ESCAPED = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))",
                      re.DOTALL)
_READ = {"n": "\n", "r": "\r", "t": "\t", ESCAPE: ESCAPE}


def escape(text: str) -> str:
    """`text` as a block shows it: as it is, but for what could break the block."""
    if text.isprintable() and ESCAPE not in text and "<" not in text:
        return text
    shown = "".join(_escape_char(ch) for ch in text)
    return _TAG.sub(r"\\x3c", shown) if "<" in shown else shown


def _escape_char(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    if unicodedata.category(ch) not in _HIDDEN:
        return ch
    code = ord(ch)
    if code in _BYTE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def read_back(shown: str) -> str:
    """The name `shown` stands for: each escape `escape` writes turned back into its
    character (`\\xHH` past ASCII: the byte, as a scan's surrogate escape). A backslash
    followed by anything else is kept as it is."""
    if ESCAPE not in shown:
        return shown
    return _ESCAPED.sub(_unescape, shown)


def _unescape(match: re.Match[str]) -> str:
    byte, small, large, other = match.groups()
    if byte is not None:
        code = int(byte, 16)
        return chr(code) if code < 0x80 else chr(0xDC00 + code)
    if small is not None or large is not None:
        code = int(small or large, 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)
    return _READ.get(other, ESCAPE + other)


def is_escaped(shown: str) -> bool:
    """Whether a shown text holds an escape (it reads back as something else)."""
    return ESCAPE in shown
