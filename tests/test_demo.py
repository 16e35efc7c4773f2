"""`freshline demo` runs to the end, offline, and shows each step of the mission."""

from __future__ import annotations

import io
import subprocess
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from freshline.interfaces.demo import PDF_LINES, pdf_bytes, run_demo, wire_blocks


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    buffer = io.StringIO()
    run_demo(Console(file=buffer, width=200, highlight=False, color_system=None))
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
    manifest = _section(first, "<project_context ", "</project_context>")
    assert "Reading List.md" in manifest
    assert "Groceries" not in manifest  # excluded by #personal


def test_a_new_note_is_named_on_the_next_turn(output: str) -> None:
    step = _section(output, "3. A note is added", "4. ")
    assert "<project_context_updates" in step
    assert "Created:" in step and "notes/Ideas.md" in step
    assert "cursor 0 → 1" in step


def test_a_pdf_is_in_progress_then_its_snapshot_follows(output: str) -> None:
    dropped = _section(output, "4. A PDF is dropped in", "5. ")
    assert "papers/attention.pdf (converting" in dropped
    later = _section(output, "5. A later turn", "6. ")
    assert "Snapshots ready" in later and ".freshline/snapshots/" in later
    assert "→ [text snapshot of papers/attention.pdf" in later  # read gave the snapshot


def test_isolated_edits_refresh_conflict_and_sync(output: str) -> None:
    edits = _section(output, "6. An isolated conversation", "7. ")
    assert "tool edit" in edits and "tool write" in edits
    assert '+    return f"Hello, {name}!"' in edits
    refresh = _section(output, "7. Upstream commits", "8. ")
    assert "Refreshed from refs/heads/feature" in refresh
    assert "refreshed paths: README.md, src/util.py" in refresh
    stop = _section(output, "8. A conflicting upstream edit", "9. ")
    assert "stopped: merging feature conflicts in 1 path(s): content: src/greeting.py" in stop
    assert "conversation head unchanged: True" in stop
    assert "model ›" not in stop
    resolved = _section(output, "9. sync", "10. ")
    assert "conflicts recorded: content: src/greeting.py" in resolved
    assert "unresolved conflicts: none" in resolved


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
    assert "unresolved conflicts: none" in out and "Done" in out
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert status.stdout == ""  # the temp dir was removed, the outer repo untouched


def test_the_generated_pdf_has_real_text() -> None:
    from pypdf import PdfReader

    text = PdfReader(io.BytesIO(pdf_bytes(PDF_LINES))).pages[0].extract_text()
    assert all(line in text for line in PDF_LINES)


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
