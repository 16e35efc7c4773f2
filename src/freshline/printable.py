"""A name made safe to print on one line (`shown`): pure, and with no imports, so the
fast commands print paths without loading `freshline.paths` (pathlib and re)."""

from __future__ import annotations


def shown(text: str) -> str:
    """`text` made safe for a one-line message: control characters as escapes (`\\n`),
    bytes that are not UTF-8 (surrogate escapes) as `\\xNN`, and then backslashes doubled,
    so an escaped name cannot be mistaken for another one."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) for c in text)


def _escaped(c: str) -> str:
    if c == "\\":
        return "\\\\"
    if "\udc80" <= c <= "\udcff":  # a byte os.fsdecode could not decode
        return f"\\x{ord(c) - 0xDC00:02x}"
    return c if c.isprintable() else repr(c)[1:-1]
