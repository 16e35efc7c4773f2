"""The chat's pure helpers: input history, Tab completion, and the "what the model was
told" line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.context import ConfigChange, DocumentInfo, Refresh, UpdatesInput
from freshline.interfaces.told import told_from_wire, told_line
from freshline.interfaces.tui.editing import (
    Completion,
    History,
    complete_command,
    complete_path,
    last_word,
)
from freshline.materialize import DocStatus
from freshline.store.records import Change, ChangeGroup, ChangeKind


def test_history_walks_back_and_forward_to_the_draft() -> None:
    h = History(["one", "two", "two", "", "three"])
    assert h.entries == ["one", "two", "three"]  # no repeats, no blanks
    assert h.back("draft") == "three" and h.back("ignored") == "two"
    assert h.back("") == "one" and h.back("") is None
    assert h.forward() == "two" and h.forward() == "three" and h.forward() == "draft"
    assert h.forward() is None
    h.add("four")
    assert h.back("") == "four"


@given(st.lists(st.text(min_size=1).filter(str.strip), max_size=6), st.text())
def test_walking_all_the_way_back_and_forth_returns_the_draft(
    entries: list[str], draft: str
) -> None:
    h = History(entries)
    seen = []
    while (entry := h.back(draft if not seen else "")) is not None:
        seen.append(entry)
    assert seen == list(reversed(h.entries))
    forward = [h.forward() for _ in seen]
    assert forward == [*reversed(seen[:-1]), draft][: len(seen)] if seen else h.forward() is None


LISTING = {
    "": [("notes", True), ("README.md", False), ("src", True)],
    "notes": [("Reading List.md", False), ("Retrieval.md", False), ("old", True)],
}


def listing(folder: str) -> list[tuple[str, bool]]:
    if folder not in LISTING:
        raise FileNotFoundError(folder)
    return LISTING[folder]


@pytest.mark.parametrize(
    ("word", "completion"),
    [
        ("no", Completion("notes/")),
        ("R", Completion("README.md")),
        ("notes/Re", Completion("notes/Re", ("notes/Reading List.md", "notes/Retrieval.md"))),
        ("notes/o", Completion("notes/old/")),
        ("x", None),
        ("missing/a", None),
    ],
)
def test_complete_path(word: str, completion: Completion | None) -> None:
    assert complete_path(word, listing) == completion


@pytest.mark.parametrize(
    ("word", "completion"),
    [
        ("/st", Completion("/status ")),
        ("/S", Completion("/s", ("/status", "/sync"))),
        ("/q", Completion("/quit ")),
        ("/x", None),
    ],
)
def test_complete_command(word: str, completion: Completion | None) -> None:
    commands = ["status", "sync", "quit", "help"]
    assert complete_command(word, commands) == completion


@pytest.mark.parametrize(("text", "word"), [("", ""), ("look at no", "no"), ("a ", "")])
def test_last_word(text: str, word: str) -> None:
    assert last_word(text) == word


def updates(**fields: object) -> UpdatesInput:
    return UpdatesInput("p", "/ws", 1, 2, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("manifest", "given", "line"),
    [
        (True, None, "↳ the project manifest"),
        (False, None, "↳ nothing new"),
        (False, updates(changes=[Change(ChangeKind.CREATED, "a"), Change(ChangeKind.CREATED, "b"),
                                 Change(ChangeKind.MODIFIED, "c")]),
         "↳ 2 created, 1 modified"),
        (False, updates(refreshed=[Refresh("refs/heads/main", "a", "b", ("x", "y"))]),
         "↳ refreshed from main (2 paths)"),
        (False, updates(compacted=True),
         "↳ the change log no longer reached back: the project manifest again"),
        (False, updates(folded=[ChangeGroup(1, 2, "x", {"created": 3, "left": 1})],
                        changes=[Change(ChangeKind.LEFT, "a")]),
         "↳ 4 earlier changes counted per folder · 1 left"),
        (False, updates(config=[ConfigChange(newly_included=("a",))]),
         "↳ scope changed (1 file newly in)"),
        (False, updates(ready_documents=[DocumentInfo("a.pdf", DocStatus.READY, "s.md")],
                        failed_documents=[DocumentInfo("b.pdf", DocStatus.FAILED)],
                        changes=[Change(ChangeKind.CREATED, "c.pdf")],
                        documents=[DocumentInfo("c.pdf", DocStatus.PENDING)]),
         "↳ 1 created · 1 snapshot ready · 1 document converting · 1 document failed"),
    ],
)
def test_told_line(manifest: bool, given: UpdatesInput | None, line: str) -> None:
    assert told_line(manifest, given) == line


def test_told_from_wire_reads_the_opening_tags() -> None:
    blocks = ('<project_context project="p" workspace="/w" epoch="3">\n…\n</project_context>'
              '\n\n<project_context_updates project="p" from_epoch="3" to_epoch="5">\n…')
    assert told_from_wire(blocks) == "↳ the project manifest · what changed (epoch 3 → 5)"
    assert told_from_wire("") == "↳ nothing new"
