"""Every command's `--help`, as a golden file per command, and what help text must never do:
show a flag as taking a value, or break a line before the margin mid-sentence.

Regenerate the golden files with `FRESHLINE_UPDATE_GOLDEN=1` and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import typer.main
from typer._click.core import Command, Context
from typer.core import TyperOption as Option
from typer.testing import CliRunner

from freshline.interfaces.cli import app

GOLDEN = Path(__file__).parent / "golden" / "help"
WIDTH = 80  # the terminal's; click keeps 2 columns free
runner = CliRunner()


def command_paths() -> list[tuple[str, ...]]:
    """The root, every command and every group with its commands, as typed."""
    paths: list[tuple[str, ...]] = [()]
    for c in app.registered_commands:
        paths.append((c.name or c.callback.__name__,))  # type: ignore[union-attr]
    for group in app.registered_groups:
        assert group.name
        paths.append((group.name,))
        paths += [(group.name, c.name or "") for c in group.typer_instance.registered_commands]
    return paths


def help_text(path: tuple[str, ...]) -> str:
    result = runner.invoke(app, [*path, "--help"], terminal_width=WIDTH, prog_name="freshline")
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "freshline")
def test_golden_help(path: tuple[str, ...]) -> None:
    text = help_text(path)
    golden = GOLDEN / f"{'-'.join(path) or 'freshline'}.txt"
    if os.environ.get("FRESHLINE_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"missing {golden}; run with FRESHLINE_UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8")


def test_every_golden_file_is_a_command() -> None:
    names = {f"{'-'.join(p) or 'freshline'}.txt" for p in command_paths()}
    assert {f.name for f in GOLDEN.iterdir()} == names


def flags(path: tuple[str, ...]) -> list[list[str]]:
    """The names of each flag (an option that takes no value) of a command."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    params = [*command.params, command.get_help_option(click_context(command))]
    return [p.opts for p in params if isinstance(p, Option) and p.is_flag]


def click_context(command: Command) -> Context:
    return Context(command, info_name="freshline")


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "freshline")
def test_a_flag_takes_no_value(path: tuple[str, ...]) -> None:
    """Seen: `--version <bool>`, `--help <bool>`, `--quiet -q <bool>`."""
    text = help_text(path)
    terms = {line.strip().split("  ")[0] for line in text.splitlines() if line.startswith("  ")}
    for names in flags(path):
        assert ", ".join(sorted(names, key=len)) in terms, (names, text)


def breaks_early(lines: list[str], width: int = WIDTH - 2) -> list[str]:
    """Lines of wrapped prose that end before the margin although the next line's first
    word would have fit: a hard line break. A line goes on from the one above when it
    starts where the text above starts: the same indentation for a paragraph, the help
    column for a definition (`term  help`)."""
    early = []
    lines = [line.rstrip(" │") for line in lines]  # a panel's padding and border, if any
    for above, below in zip(lines, lines[1:], strict=False):
        if not above.strip() or not below.strip():
            continue
        term = re.match(r"^\s*\S+(?: \S+)*?\s{2,}(?=\S)", above)
        column = len(term.group(0)) if term else len(above) - len(above.lstrip())
        if len(below) - len(below.lstrip()) == column:
            word = below.split()[0]
            if len(above) + 1 + len(word) <= width:
                early.append(f"{above!r} / {below!r}")
    return early


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "freshline")
def test_no_hard_line_break_mid_sentence(path: tuple[str, ...]) -> None:
    """Seen: `(--quiet: only` / `problems)`, and selftest's, publish's and send's help."""
    assert breaks_early(help_text(path).splitlines()) == []


@pytest.mark.parametrize(("lines", "early"), [
    (["  one two", "  three"], True),
    (["  " + "word " * 15 + "end", "  more"], False),
    (["  a sentence.", "", "  Next paragraph."], False),
    (["  --json   Print JSON", "  --help   Show"], False),
    (["  --model TEXT  echo, scripted", "                (default"], True),
    (["  --model TEXT  " + "echo " * 12, "                (default"], False),
    (["  init  Create it.", "  scan  Bring it."], False),
])
def test_breaks_early_finds_hard_breaks(lines: list[str], early: bool) -> None:
    assert bool(breaks_early(lines)) is early
