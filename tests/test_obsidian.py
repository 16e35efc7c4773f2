"""Notes read the way Obsidian reads them: the eleven repro notes of issue 12, through the
library and through `freshline project files`, and the nested property that made a tagged
note look deleted."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app
from freshline.markdown import parse_note
from freshline.scope import FileFacts, Scope
from freshline.store.records import ChangeKind

from .conftest import Workspace

NBSP = "\u00a0"
ALPHA_ACTIVE = "tags:\n  - alpha\nstatus: active\n"

# name, note text, in `#alpha`, in `[status:active]`
REPROS = [
    ("r1", f"---\n{ALPHA_ACTIVE}review:\n  next: 2025-12-23\n---\n", True, True),
    ("r2", f"---\n{ALPHA_ACTIVE}related:\n  - [[Some Note]]\n---\n", True, True),
    ("r3", "---\ntags: #alpha #beta\n---\n", False, False),
    ("r4", "---\ntags:\n  - prompt engineering\n---\n", False, False),
    ("r5", "- step one:\n\n    ```yaml\n    color: #alpha\n\n    other: 1\n    ```", False, False),
    (
        "r6",
        "> [!example]\n> ```markdown\n> ```tasks\n> not done\n> ```\n> - [ ] todo #alpha\n> ```\n",
        True,
        False,
    ),
    ("r7", "\\```dataview\nLIST FROM #alpha\n\\```\n", True, False),
    ("r8", '---\ntags: ["caf\\u00e9"]\nstatus: "a\\_b"\n---\n', False, False),
    ("r9", "---\ntag: alpha\n---\n", False, False),
    ("r10", "---\ntags: [#alpha, #beta]\nstatus: active\n---\n", False, False),
    ("r11", "---\ntags: [alpha]\nstatus: Active\n---\n", True, True),
]
# What else the repros say: r4 has no tag #prompt, r8 is tagged #café and its status is
# "a<NBSP>b" (YAML's `\_` escape).
EXTRA = {"prompt": "#prompt", "cafe": "#café", "nbsp": f"[status:a{NBSP}b]"}
EXTRA_MEMBERS = {"prompt": [], "cafe": ["r8.md"], "nbsp": ["r8.md"]}


def in_scope(pattern: str, name: str, text: str) -> bool:
    facts = parse_note(text)
    return Scope.from_strings([pattern]).matches(
        FileFacts(f"{name}.md", facts.tags, facts.properties)
    )


@pytest.mark.parametrize(("name", "text", "alpha", "active"), REPROS, ids=[r[0] for r in REPROS])
def test_repro_note(name: str, text: str, alpha: bool, active: bool) -> None:
    assert in_scope("#alpha", name, text) is alpha
    assert in_scope("[status:active]", name, text) is active


def test_repro_details() -> None:
    notes = {name: parse_note(text) for name, text, _, _ in REPROS}
    assert "prompt" not in notes["r4"].tags and not notes["r4"].tags
    assert notes["r8"].tags == {"café"}
    assert notes["r8"].properties["status"] == f"a{NBSP}b"
    assert notes["r1"].properties["review"] == {"next": "2025-12-23"}
    assert notes["r2"].properties["related"] == ["[[Some Note]]"]
    assert notes["r10"].properties == {} and notes["r9"].tags == frozenset()


def test_repros_through_project_files(ws: Workspace) -> None:
    projects = {"alpha": "#alpha", "active": "[status:active]", **EXTRA}
    ws.configure({name: {"include": [pattern]} for name, pattern in projects.items()})
    for name, text, _, _ in REPROS:
        ws.write(f"{name}.md", text)
    expected = {
        "alpha": sorted(f"{n}.md" for n, _, alpha, _ in REPROS if alpha),
        "active": sorted(f"{n}.md" for n, _, _, active in REPROS if active),
        **EXTRA_MEMBERS,
    }
    runner = CliRunner()
    for name in projects:
        args = ["--workspace", str(ws.root), "project", "files", name, "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.stderr
        assert sorted(json.loads(result.stdout)) == expected[name], name


def test_adding_a_nested_property_keeps_a_tagged_note_in_its_project(ws: Workspace) -> None:
    ws.configure({"alpha": {"include": ["#alpha"]}})
    ws.write("n.md", f"---\n{ALPHA_ACTIVE}---\ntext\n")
    tracker = ws.tracker()
    tracker.scan()
    before = tracker.epoch("alpha")
    ws.write("n.md", f"---\n{ALPHA_ACTIVE}review:\n  next: 2025-12-23\n---\ntext\n")
    tracker.scan()
    changes = tracker.changes_since("alpha", before).changes
    assert [(c.kind, c.path) for c in changes] == [(ChangeKind.MODIFIED, "n.md")]
    assert [e.path for e in tracker.files_in_scope("alpha")] == ["n.md"]
