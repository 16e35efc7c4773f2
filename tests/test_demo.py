"""`freshline demo` runs to the end, offline, and shows each step of the mission."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from freshline.interfaces.demo import PDF_LINES, TRY_IT, WIDTH, pdf_bytes, run_demo
from freshline.interfaces.told import wire_blocks
from freshline.program import as_typed

TRY = "Try it on your own folder of notes:"


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    buffer = io.StringIO()
    run_demo(Console(file=buffer, width=WIDTH, highlight=False, color_system=None))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> str:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _run(tmp_path_factory.mktemp("demo"), monkeypatch)


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end, text.index(start))]


def test_first_turn_carries_the_manifest_with_the_docx_snapshot(output: str) -> None:
    first = _section(output, "2. First turn", "3. ")
    assert "<project_context project=\"research\"" in first
    assert "docs/requirements.docx →" in first
    assert "The agent now knows the project as of epoch 0" in first
    manifest = _section(first, "<project_context ", "</project_context>")
    assert "Reading List.md" in manifest
    assert "Groceries" not in manifest  # excluded by #personal


def test_a_new_note_is_named_on_the_next_turn(output: str) -> None:
    step = _section(output, "3. A note is added", "4. ")
    assert "<project_context_updates" in step
    assert "Created:" in step and "notes/Ideas.md" in step
    assert "The agent's cursor moved from epoch 0 to 1" in step


def test_a_pdf_is_in_progress_then_its_snapshot_follows(output: str) -> None:
    dropped = _section(output, "4. A PDF is dropped in", "5. ")
    assert "papers/attention.pdf (converting" in " ".join(dropped.split())
    later = _section(output, "5. A later turn", "6. ")
    assert "Snapshots ready" in later and ".freshline/snapshots/" in later
    assert "→ [text snapshot of <workspac" in later  # the read gave the snapshot


def test_isolated_edits_refresh_conflict_and_sync(output: str) -> None:
    edits = _section(output, "6. An isolated conversation", "7. ")
    assert "tool edit" in edits and "tool write" in edits
    assert '+    return f"Hello, {name}!"' in edits
    refresh = _section(output, "7. Upstream commits", "8. ")
    assert "Refreshed from feature (" in refresh
    assert "the paths it brought in, README.md, src/util.py" in " ".join(refresh.split())
    stop = " ".join(_section(output, "8. A conflicting upstream edit", "9. ").split())
    assert "Stopped: merging feature conflicts in 1 path: content: src/greeting.py" in stop
    assert "nothing was recorded: the conversation and the agent's cursor are where" in stop
    assert "model ›" not in stop
    resolved = " ".join(_section(output, "9. sync", "10. ").split())
    assert "its conflicts (content: src/greeting.py)" in resolved
    assert "No conflict is left" in resolved


def test_the_transcript_holds_messages_but_never_blocks(output: str) -> None:
    log = _section(output, "10. The transcript is git history", "11. Done")
    assert "user" in log and "Make the greeting friendlier" in log
    assert "merge" in log and "sync feature" in log
    assert "project_context" not in log


def test_runs_inside_a_foreign_git_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True)
    out = _run(tmp_path, monkeypatch)
    assert "No conflict is left" in out and "Done" in out
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert status.stdout == ""  # the temp dir was removed, the outer repo untouched


def test_the_generated_pdf_has_real_text() -> None:
    from pypdf import PdfReader

    text = PdfReader(io.BytesIO(pdf_bytes(PDF_LINES))).pages[0].extract_text()
    assert all(line in text for line in PDF_LINES)


def test_it_reads_as_a_story_within_80_columns(output: str) -> None:
    story = output[: output.index(TRY)]  # the commands after it are never wrapped
    assert all(len(line) <= WIDTH for line in story.splitlines())
    for debug in ("cursor 0 → ", ": True", ": False", "head unchanged", "None", "[]"):
        assert debug not in output
    # temp paths are shown as <workspace>; the checkout's own (in the commands to try) may
    # be anywhere, /tmp too
    checkout = str(Path(__file__).resolve().parents[1])
    assert "/tmp/" not in output.split("\n", 6)[-1].replace(checkout, "<checkout>")


def test_its_last_lines_run_as_printed(output: str, tmp_path: Path) -> None:
    """Seen: "Try it on your own folder: `freshline init` …" gave `command not found`."""
    commands = [line.strip() for line in output[output.index(TRY):].splitlines()[1:]]
    assert len(commands) == len(TRY_IT) and commands[0].endswith(" init ~/notes")
    env = {**os.environ, "HOME": str(tmp_path)}
    for command in commands[:2]:  # the last one opens the chat
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, (command, done.stderr)
    assert "[projects.notes]" in (tmp_path / "notes" / "freshline.toml").read_text()


def test_freshline_is_named_as_it_can_be_typed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = Path(sys.executable).parent / "freshline"  # the console script of this venv
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    assert as_typed() == ("freshline", True)
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    (elsewhere / "freshline").symlink_to("/bin/true")  # another program of that name
    monkeypatch.setenv("PATH", f"{elsewhere}{os.pathsep}/usr/bin:/bin")
    assert as_typed() == (str(script.resolve()), False)


@pytest.mark.parametrize(
    ("wire", "message", "blocks"),
    [
        ("hi", "hi", ""),
        ("<a>\n</a>\n\nhi", "hi", "<a>\n</a>"),
        ("<a/>\n\nline one\n\nline two", "line one\n\nline two", "<a/>"),
    ],
)
def test_wire_blocks_are_what_precedes_the_message(wire: str, message: str, blocks: str) -> None:
    assert wire_blocks(wire, message) == blocks
