"""The note parser is linear by construction: checked by its regular expressions' shape and by
counting the Python lines it runs, never by a clock (bench/markdown.py times it)."""

from __future__ import annotations

import ast
import random
import re
import re._parser as sre  # the standard library's own regex parser: its tree is what we check
import sys
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import pytest

import freshline.markdown as markdown
from freshline.markdown import body, frontmatter, parse_note

from . import pathological
from .pathological import Line

MODULES = (markdown, body, frontmatter)
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}


def _has_repeat(items: Any) -> bool:
    for op, av in items:
        if op in _REPEATS:
            return True
        if op is sre.BRANCH and any(_has_repeat(alt) for alt in av[1]):
            return True
        if op is sre.SUBPATTERN and _has_repeat(av[-1]):
            return True
        if op in (sre.ASSERT, sre.ASSERT_NOT) and _has_repeat(av[1]):
            return True
    return False


def _repeats_only_at_end(items: Any) -> bool:
    """Nothing can fail after a repeat, and repeats do not nest: every match attempt is
    a bounded prefix, then at most one greedy run that always succeeds."""
    items = list(items)
    if not items:
        return True
    if _has_repeat(items[:-1]):
        return False
    op, av = items[-1]
    if op in _REPEATS:
        return not _has_repeat(av[2])
    if op is sre.BRANCH:
        return all(_repeats_only_at_end(alt) for alt in av[1])
    if op is sre.SUBPATTERN:
        return _repeats_only_at_end(av[-1])
    return not _has_repeat([items[-1]])


def _patterns(module: ModuleType) -> list[re.Pattern[str]]:
    return [v for v in vars(module).values() if isinstance(v, re.Pattern)]


@pytest.mark.parametrize(
    "pattern",
    [p for m in MODULES for p in _patterns(m)],
    ids=lambda p: p.pattern,
)
def test_every_regex_over_note_text_repeats_only_at_its_end(pattern: re.Pattern[str]) -> None:
    assert _repeats_only_at_end(sre.parse(pattern.pattern, pattern.flags))


@pytest.mark.parametrize(
    ("source", "linear"),
    [
        (r"[A-Za-z][A-Za-z0-9+.-]*://\S+", False),  # the old URL pattern: quadratic
        (r"\[\[[^\]\n]*\]\]", False),
        (r"%%.*?%%", False),
        (r"(?:a+)+", False),
        (r"(?<!\S)#\S+", True),
        (r"\\`+|\\.|`+", True),
    ],
)
def test_the_shape_check_tells_them_apart(source: str, linear: bool) -> None:
    assert _repeats_only_at_end(sre.parse(source)) is linear


def test_regexes_are_compiled_once_at_module_level() -> None:
    """No `re.sub(...)`, `re.split(...)` or a pattern built from note text at run time: the
    patterns checked above are all there is."""
    for module in MODULES:
        assert module.__file__ is not None
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert "re" not in _names_used(node), f"{module.__name__}.{node.name} uses re"
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "re":
                    assert node.attr == "compile" or node.attr.isupper(), node.attr


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# --- counting the work ------------------------------------------------------------------------


def _repeated(unit: str) -> Line:
    return lambda n, _rng: (unit * (n // len(unit) + 1))[:n]


KINDS = {
    **pathological.KINDS,
    "url-ish words": _repeated("http#a "),
    "scheme run": _repeated("abc+def.ghi-"),
    "wiki opens": _repeated("[[ "),
    "link opens": _repeated("]( "),
    "comment opens": _repeated("<!-- #a "),
    "math opens": _repeated("$a #b "),
    "code opens": _repeated("`a ``b #c "),
    "tags": _repeated("#a "),
    "quotes": _repeated(">"),
}


def _lines_run(text: str) -> int:
    files = {m.__file__ for m in MODULES}
    count = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if frame.f_code.co_filename not in files:
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        parse_note(text)
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["body", "front matter"])
def test_sixteen_times_the_text_is_at_most_twenty_times_the_work(kind: str, where: str) -> None:
    def note(n: int) -> str:
        line = KINDS[kind](n, random.Random(n))
        return f"---\nkey: {line}\n---\n#x\n" if where == "front matter" else f"#x\n{line}\n"

    small, large = _lines_run(note(8 << 10)), _lines_run(note(128 << 10))
    assert large <= 20 * max(small, 50), (small, large)
