"""`--help` without typer: the text typer printed last time for the same command, kept.

Importing typer and the commands' modules costs several times an empty Python's start-up,
and `freshline --help` or `freshline project add --help` is what a new user types first.
The help is a pure function of freshline's source, typer's and the terminal's width (click
fits it to the width, up to 80 columns), so the text typer printed is kept in the user's
cache folder (`$XDG_CACHE_HOME/freshline/help.json`, else `~/.cache/…`) with a key that
changes whenever any of those does: each `.py` file of freshline and of typer with its
size and modification time, and Python's version (the width names each text). A help not
kept is typer's to answer, and its answer is kept (`Recording`); a cache that cannot be
read or written is no cache. Only the plain form is served, `--help` after a command's
words and nothing else (an unknown word, or any other option, is typer's: it says what
is wrong).

Module-level imports stay within the standard library's basics (the fast path imports
this).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import TextIO

HELP = "--help"
MAX_WIDTH = 80  # click's `max_width`: help never grows wider
PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def asked(words: Sequence[str]) -> tuple[str, ...] | None:
    """The command whose help `words` (the workspace flags taken out) ask for: the words
    before a final `--help` when they are all plain words; else None."""
    if not words or words[-1] != HELP:
        return None
    path = tuple(words[:-1])
    return path if all(w and not w.startswith("-") for w in path) else None


def cached(path: Sequence[str]) -> str | None:
    """The help kept for `path` at this width, under today's key, if any."""
    from freshline.interfaces import wire

    try:
        with open(_file(), encoding="utf-8") as handle:
            kept = wire.loads(handle.read())
        text = kept["texts"].get(_name(path)) if kept["key"] == _key() else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return text if isinstance(text, str) else None


def keep(path: Sequence[str], text: str) -> None:
    """Keep typer's help for `path` at this width under today's key (the texts kept under
    another key are dropped)."""
    import json

    where, key = _file(), _key()
    try:
        os.makedirs(os.path.dirname(where), exist_ok=True)
        try:
            with open(where, encoding="utf-8") as handle:
                kept = json.load(handle)
            texts = kept["texts"] if kept["key"] == key else {}
        except (OSError, ValueError, KeyError, TypeError):
            texts = {}
        texts[_name(path)] = text
        temporary = f"{where}.{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"key": key, "texts": texts}, handle)
        os.replace(temporary, where)
    except OSError:
        return  # no cache: the next --help is typer's again


class Recording:
    """Around typer's run of a command line: when it asked for `path`'s help (not None)
    and typer printed it and exited with 0, what it printed is kept."""

    def __init__(self, path: Sequence[str] | None) -> None:
        self.path = path
        self.parts: list[str] = []
        self.stream: TextIO | None = None

    def write(self, text: str) -> int:
        """Standard output's `write`, keeping a copy."""
        assert self.stream is not None
        written = self.stream.write(text)  # click probes with bytes first: a TypeError
        self.parts.append(text)
        return written

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)

    def __enter__(self) -> Recording:
        if self.path is not None:
            self.stream, sys.stdout = sys.stdout, self
        return self

    def __exit__(self, kind: object, error: BaseException | None, _trace: object) -> None:
        if self.stream is None:
            return
        sys.stdout = self.stream
        text = "".join(self.parts)
        # Kept only as the help of the command its usage line names: `send S --help`
        # prints send's, which is no answer for `send T --help`.
        usage = " ".join(["Usage: freshline", *(self.path or ())]) + " "
        if (isinstance(error, SystemExit) and error.code in (0, None)
                and text.startswith(usage) and self.path is not None):
            keep(self.path, text)


def _name(path: Sequence[str]) -> str:
    return f"{_width()} {' '.join(path)}"


def _file() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "freshline", "help.json")


def _key() -> str:
    """What the help depends on besides the width: Python's version, and each source file
    of freshline and of typer with its size and modification time."""
    return "".join([sys.version, "\n", *_sources(PACKAGE), *_typer()])


def _width() -> int:
    """The columns click fits help to: the terminal's as `shutil.get_terminal_size` finds
    them (`$COLUMNS`, else standard output's terminal, else 80), at most 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return min(columns or MAX_WIDTH, MAX_WIDTH)


def _sources(top: str) -> Iterator[str]:
    """Each `.py` file under `top`, with its size and modification time."""
    for folder, subfolders, files in os.walk(top):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(folder, name))
                yield f"{folder}/{name} {stat.st_size} {stat.st_mtime_ns}\n"


def _typer() -> Iterator[str]:
    """The typer that renders the help: its files' sizes and times say which it is."""
    for entry in sys.path:
        found = os.path.join(entry or ".", "typer", "__init__.py")
        if os.path.isfile(found):
            yield from _sources(os.path.dirname(found))
            return
