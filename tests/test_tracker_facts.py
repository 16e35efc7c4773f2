"""Notes are parsed only while a scope needs their tags or properties.

A workspace whose projects match by path alone stores its notes unparsed (`parsed` is
False); the flush whose config first asks for tags or properties reads every such note
again before it compares scopes, so what entered or left is exact.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from freshline.store.records import ChangeKind
from freshline.tracker import scan as scan_module
from freshline.tracker.hints import Liveness

from .conftest import Workspace
from .test_tracker_stateful import replay

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The heads of the notes the scanner parses from now on."""
    seen: list[bytes] = []
    real = scan_module.parse_note

    def counting(head: bytes) -> object:
        seen.append(head)
        return real(head)

    monkeypatch.setattr(scan_module, "parse_note", counting)
    return seen


@pytest.fixture
def vault(ws: Workspace) -> Workspace:
    """Notes written a while ago: a scan trusts their stat (none is racily clean)."""
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/b.md", "hello #paper\n")
    ws.write("other/c.md", "---\nstatus: active\n---\nabout #paper\n")
    ws.write("other/d.txt", "#paper in a text file is no tag\n")
    old = time.time() - 60
    for path in ("notes/a.md", "notes/b.md", "other/c.md", "other/d.txt"):
        os.utime(ws.root / path, (old, old))
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def in_scope(ws: Workspace, project: str = "p") -> list[str]:
    return [e.path for e in ws.tracker().files_in_scope(project)]


def test_path_scopes_parse_no_note(vault: Workspace, parses: list[bytes]) -> None:
    t = vault.tracker()
    t.scan()
    assert parses == []
    entry = t.store.index_get("notes/b.md")
    assert entry is not None and not entry.parsed and entry.tags == ()
    text = t.store.index_get("other/d.txt")
    assert text is not None and text.parsed  # nothing to parse in a text file
    vault.write("notes/b.md", "edited #paper\n")
    t.scan()
    assert parses == []


def test_a_tag_pattern_added_later_sees_the_tags_of_unchanged_notes(vault: Workspace) -> None:
    vault.tracker().scan()
    vault.configure({"p": {"include": ["#paper"]}})
    changes = vault.tracker().scan().projects["p"].changes
    config = next(c for c in changes if c.kind is ChangeKind.CONFIG)
    assert config.detail is not None
    assert config.detail["newly_included"] == ["other/c.md"]
    assert config.detail["no_longer_included"] == ["notes/a.md"]
    assert [(c.kind, c.path) for c in changes if c.path] == [
        (ChangeKind.LEFT, "notes/a.md"), (ChangeKind.ENTERED, "other/c.md")]
    assert in_scope(vault) == ["notes/b.md", "other/c.md"]
    entry = vault.tracker().store.index_get("other/c.md")
    assert entry is not None and entry.parsed and entry.properties == {"status": "active"}


def test_a_new_project_by_property_on_a_hinted_flush(vault: Workspace) -> None:
    t = vault.tracker()
    t.scan()
    vault.configure({"p": {"include": ["notes"]}, "q": {"include": ["[status:active]"]}})
    vault.write("notes/a.md", "# A, edited\n")
    t.store.hints_add(["notes/a.md"])
    alive = Liveness(t.store)  # a watcher holds its lock: only the hinted path is scanned
    assert alive.hold()
    result = t.flush(sync=False)
    assert [c.path for c in result.projects["p"].changes] == ["notes/a.md"]
    assert in_scope(vault, "q") == ["other/c.md"]


def test_a_scope_change_and_edits_in_one_flush_are_told_exactly(vault: Workspace) -> None:
    t = vault.tracker()
    t.scan()
    seen = {e.path: e.blob for e in t.files_in_scope("p")}
    vault.configure({"p": {"include": ["#paper"]}})
    vault.write("notes/b.md", "still a #paper, edited\n")
    (vault.root / "archive").mkdir()
    os.rename(vault.root / "notes/a.md", vault.root / "archive/a.md")
    vault.write("archive/a.md", "# A, now a #paper\n")
    (vault.root / "other/c.md").unlink()
    vault.write("other/e.md", "new #paper\n")
    t = vault.tracker()
    changes = t.scan().projects["p"].changes
    today = {e.path: e.blob for e in t.files_in_scope("p")}
    assert sorted(today) == ["archive/a.md", "notes/b.md", "other/e.md"]
    assert replay(seen, [c for c in changes if c.path], today) == today
    assert (M, "notes/b.md") in [(c.kind, c.path) for c in changes]


def test_dropping_the_last_tag_pattern_judges_the_old_scope_on_parsed_notes(
    vault: Workspace,
) -> None:
    vault.configure({"p": {"include": ["#paper"]}})
    t = vault.tracker()
    t.scan()
    seen = {e.path: e.blob for e in t.files_in_scope("p")}
    vault.configure({"p": {"include": ["other"]}})
    vault.write("other/f.md", "new, and a #paper\n")
    t = vault.tracker()
    changes = t.scan().projects["p"].changes
    config = next(c for c in changes if c.kind is ChangeKind.CONFIG)
    assert config.detail is not None
    assert config.detail["no_longer_included"] == ["notes/b.md"]
    assert config.detail["newly_included"] == ["other/d.txt"]
    today = {e.path: e.blob for e in t.files_in_scope("p")}
    assert replay(seen, [c for c in changes if c.path], today) == today


def test_files_in_scope_before_the_flush_reads_tags_from_disk(vault: Workspace) -> None:
    """`status` reads the index without flushing: a tag pattern just added still counts
    the notes that carry it."""
    vault.tracker().scan()
    vault.configure({"p": {"include": ["#paper"]}})
    assert in_scope(vault) == ["notes/b.md", "other/c.md"]


def test_a_scan_by_paths_loads_no_yaml(vault: Workspace) -> None:
    """PyYAML (and pathspec, with no ignore file) load only when needed: a command's
    start-up costs less than the scan it runs."""
    code = ("import sys\nfrom freshline.config import load_config\n"
            "from freshline.tracker import Tracker\n"
            "Tracker(load_config(sys.argv[1])).scan()\n"
            "print(sorted(m for m in ('yaml', 'pathspec') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code, str(vault.root)],
                          capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
    vault.configure({"p": {"include": ["[status:active]"]}})
    done = subprocess.run([sys.executable, "-c", code, str(vault.root)],
                          capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "['yaml']"
