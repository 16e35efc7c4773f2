"""The tracker on real files: scans, renames, scoping per project, epochs, the capped log."""

from __future__ import annotations

import ctypes
import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.store.records import Change, ChangeGroup, ChangeKind
from freshline.tracker import scan as scan_module
from freshline.tracker.hints import Liveness
from freshline.tracker.scan import Scanner, outermost

from .conftest import Workspace

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED
MOVED = {"why": "moved"}  # a file renamed or moved out of the scope: it left, it was not deleted


def logged(ws: Workspace, project: str = "p") -> list[Change]:
    """Flush, then return what this flush logged for `project`."""
    result = ws.tracker().scan()
    delta = result.projects.get(project)
    return delta.changes if delta else []


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/b.md", "hello #paper\n")
    ws.write("other/c.md", "other\n")
    ws.configure({"p": {"include": ["notes"]}})
    ws.tracker().scan()
    return ws


def test_first_scan_sets_epoch_zero_then_changes_bump_once(notes: Workspace) -> None:
    t = notes.tracker()
    assert t.epoch("p") == 0
    notes.write("notes/new.md", "x")
    notes.write("notes/a.md", "# A changed\n")
    (notes.root / "notes/b.md").unlink()
    assert logged(notes) == [
        Change(M, "notes/a.md"),
        Change(D, "notes/b.md"),
        Change(C, "notes/new.md"),
    ]
    assert t.epoch("p") == 1
    assert logged(notes) == []
    assert t.epoch("p") == 1


def test_rename_within_out_of_and_into_scope(notes: Workspace) -> None:
    root = notes.root
    os.rename(root / "notes/a.md", root / "notes/a2.md")
    assert logged(notes) == [Change(R, "notes/a2.md", "notes/a.md")]
    os.rename(root / "notes/a2.md", root / "other/a2.md")  # still there: never "deleted"
    assert logged(notes) == [Change(ChangeKind.LEFT, "notes/a2.md", detail=MOVED)]
    os.rename(root / "other/c.md", root / "notes/c.md")
    assert logged(notes) == [Change(C, "notes/c.md")]


def test_rename_with_edit_is_rename_plus_modified(notes: Workspace) -> None:
    notes.write("notes/a.md", "# A\n\nThe first paragraph of a longer note.\n")
    logged(notes)
    os.rename(notes.root / "notes/a.md", notes.root / "notes/z.md")
    notes.write("notes/z.md", "# A\n\nThe first paragraph of a longer note.\nAnd one more.\n")
    assert logged(notes) == [Change(M, "notes/z.md"), Change(R, "notes/z.md", "notes/a.md")]


def test_case_only_rename(notes: Workspace) -> None:
    os.rename(notes.root / "notes/a.md", notes.root / "notes/A.md")
    assert logged(notes) == [Change(R, "notes/A.md", "notes/a.md")]


def test_folder_rename_of_a_thousand_files(ws: Workspace) -> None:
    for i in range(1000):
        ws.write(f"big/sub{i % 10}/f{i}.txt", f"file {i}")
    ws.configure({"p": {"include": ["big", "moved"]}})
    ws.tracker().scan()
    os.rename(ws.root / "big", ws.root / "moved")
    changes = logged(ws)
    folders = [c for c in changes if c.detail and c.detail.get("folder")]
    assert folders == [Change(R, "moved", "big", {"folder": True})]
    renamed = [c for c in changes if c.kind is R and not c.detail]
    assert len(renamed) == 1000 and len(changes) == 1001
    assert all(c.path == "moved" + c.old_path[3:] for c in renamed if c.old_path)


def test_tag_gained_and_lost_and_md_to_txt(ws: Workspace) -> None:
    ws.write("n/a.md", "plain\n")
    ws.configure({"p": {"include": ["#paper"]}})
    ws.tracker().scan()
    ws.write("n/a.md", "now a #paper\n")
    paper = {"why": "tagged", "pattern": "#paper"}
    assert logged(ws) == [Change(ChangeKind.ENTERED, "n/a.md", detail=paper)]
    ws.write("n/a.md", "---\ntags: [paper, x]\n---\nfront matter tag\n")
    assert logged(ws) == [Change(M, "n/a.md")]
    os.rename(ws.root / "n/a.md", ws.root / "n/a.txt")
    assert logged(ws) == [Change(ChangeKind.LEFT, "n/a.md", detail=MOVED)]
    os.rename(ws.root / "n/a.txt", ws.root / "n/a.md")
    assert logged(ws) == [Change(C, "n/a.md")]
    ws.write("n/a.md", "---\ntags: [x]\n---\nno longer\n")
    untagged = {"why": "untagged", "pattern": "#paper"}
    assert logged(ws) == [Change(ChangeKind.LEFT, "n/a.md", detail=untagged)]


def test_note_title_pattern_across_a_rename(ws: Workspace) -> None:
    ws.write("n/Reading List.md", "list\n")
    ws.configure({"p": {"include": ["[[Reading List]]"]}})
    ws.tracker().scan()
    (ws.root / "archive").mkdir()
    os.rename(ws.root / "n/Reading List.md", ws.root / "archive/Reading List.md")
    assert logged(ws) == [Change(R, "archive/Reading List.md", "n/Reading List.md")]
    os.rename(ws.root / "archive/Reading List.md", ws.root / "archive/Old List.md")
    assert logged(ws) == [Change(ChangeKind.LEFT, "archive/Reading List.md", detail=MOVED)]


def test_excluded_subfolder_and_internal_paths(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["**"], "exclude": ["docs/old"]}})
    ws.tracker().scan()
    ws.write("docs/old/x.md", "x")
    ws.write("docs/new/y.md", "y")
    ws.write(".freshline/junk", "internal")
    ws.write(".git/HEAD", "ref: refs/heads/main\n")
    (ws.root / "freshline.toml").write_text(
        (ws.root / "freshline.toml").read_text() + "# a comment\n"
    )
    assert logged(ws) == [Change(C, "docs/new/y.md")]


def test_symlinks_recorded_never_followed(ws: Workspace) -> None:
    ws.write("d/file.md", "x")
    os.symlink("..", ws.root / "d/loop")
    os.symlink("/etc", ws.root / "d/outside")
    ws.configure({"p": {"include": ["d"]}})
    t = ws.tracker()
    t.scan()
    entries = {e.path: e for e in t.files_in_scope("p")}
    assert set(entries) == {"d/file.md", "d/loop", "d/outside"}
    assert entries["d/loop"].kind.value == "link" and entries["d/loop"].mode == 0o120000


def test_non_utf8_name_round_trips(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["d"]}})
    ws.tracker().scan()
    (ws.root / "d").mkdir()
    name = os.fsencode(str(ws.root / "d")) + b"/caf\xe9.md"
    with open(name, "wb") as f:
        f.write(b"bytes")
    changes = logged(ws)
    assert changes == [Change(C, "d/caf\udce9.md")]
    os.unlink(name)
    assert logged(ws) == [Change(D, "d/caf\udce9.md")]


def test_hard_links_and_empty_directories(notes: Workspace) -> None:
    os.link(notes.root / "notes/a.md", notes.root / "notes/a-link.md")
    (notes.root / "notes/empty/deeper").mkdir(parents=True)
    assert logged(notes) == [Change(C, "notes/a-link.md")]
    (notes.root / "notes/a.md").unlink()
    assert logged(notes) == [Change(D, "notes/a.md")]


def test_vanished_file_is_a_warning_not_a_crash(notes: Workspace) -> None:
    t = notes.tracker()
    scanner = Scanner(notes.root, t.store)
    st = os.lstat(notes.root / "notes/a.md")
    (notes.root / "notes/a.md").unlink()
    assert scanner.entry("notes/a.md", st) is None
    assert scanner.warnings == ["notes/a.md: vanished while being scanned"]


SCAN_UNPRIVILEGED = """
import json, sys
from freshline.config import load_config
from freshline.tracker import Tracker
r = Tracker(load_config(sys.argv[1])).scan()
print(json.dumps({"warnings": r.warnings,
                  "changes": {k: [c.path for c in v.changes] for k, v in r.projects.items()}}))
"""


def _drop_file_read_override() -> None:
    # Root reads any file; without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH it cannot.
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP, effective from the next exec


def test_permission_denied_keeps_the_previous_entry(ws: Workspace) -> None:
    ws.write("d/ok.md", "fine")
    secret = ws.write("d/secret.md", "v1")
    ws.configure({"p": {"include": ["d"]}})
    ws.tracker().scan()
    secret.write_text("v2 longer")
    os.chmod(secret, 0o000)
    out = subprocess.run(
        [sys.executable, "-c", SCAN_UNPRIVILEGED, str(ws.root)],
        preexec_fn=_drop_file_read_override, capture_output=True, text=True, check=True,
    )
    result = json.loads(out.stdout)
    assert result["warnings"] == ["d/secret.md: cannot read (Permission denied)"]
    assert result["changes"] == {}
    entry = ws.tracker().store.index_get("d/secret.md")
    assert entry is not None and entry.size == 2


def test_restart_finds_changes_made_while_nothing_ran(notes: Workspace) -> None:
    notes.write("notes/offline.md", "made while freshline was not running")
    fresh_process_view = notes.tracker()
    assert [c.path for c in fresh_process_view.scan().projects["p"].changes] == [
        "notes/offline.md"
    ]


def test_targeted_scan_sees_only_hinted_subtrees(notes: Workspace) -> None:
    notes.write("notes/sub/x.md", "x")
    notes.write("other/y.md", "y")
    t = notes.tracker()
    result = t.scan(["notes/sub"])
    assert [c.path for c in result.projects["p"].changes] == ["notes/sub/x.md"]
    assert t.store.index_get("other/y.md") is None


def test_compaction_keeps_what_it_dropped_as_counts_per_folder(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["n"]}}, change_log_cap=5)
    t = ws.tracker()
    t.scan()
    for i in range(4):
        ws.write(f"n/{i}a.md", "a")
        ws.write(f"n/{i}b.md", "b")
        t.scan()
    assert t.epoch("p") == 4
    state = t.store.project_state("p")
    assert state is not None and state.compacted_through == 2
    behind = t.changes_since("p", 1)
    assert behind.compacted and not behind.forgotten
    assert behind.folded == [ChangeGroup(2, 2, "n", {"created": 2})]
    assert [c.path for c in behind.changes] == ["n/2a.md", "n/2b.md", "n/3a.md", "n/3b.md"]
    assert t.changes_since("p", 0).folded == [ChangeGroup(1, 2, "n", {"created": 4})]
    recent = t.changes_since("p", 2)
    assert not recent.compacted and len(recent.changes) == 4 and not recent.folded


def test_past_their_own_cap_the_oldest_counts_are_forgotten(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["n"]}}, change_log_cap=2)
    t = ws.tracker()
    t.scan()
    for i in range(30):  # 20 groups are kept at this cap, one per compaction here
        ws.write(f"n/f{i}/a.md", "a")
        t.scan()
    state = t.store.project_state("p")
    assert state is not None and state.forgotten_through == 8
    assert t.changes_since("p", 7).forgotten and t.changes_since("p", 7).changes == []
    kept = t.changes_since("p", 8)  # epoch 9 (n/f8) is the oldest the counts reach
    assert kept.compacted and not kept.forgotten
    assert {g.folder for g in kept.folded} == {f"n/f{i}" for i in range(8, 28)}


def test_one_flush_larger_than_the_cap_is_kept_whole(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["n"]}}, change_log_cap=5)
    t = ws.tracker()
    t.scan()
    ws.write("n/first.md", "first")
    t.scan()
    for i in range(8):
        ws.write(f"n/{i}.md", f"note {i}")
    t.scan()
    answer = t.changes_since("p", 1)
    assert not answer.compacted and len(answer.changes) == 8
    assert t.changes_since("p", 0).compacted


def test_changes_since_coalesces_across_epochs(notes: Workspace) -> None:
    t = notes.tracker()
    notes.write("notes/n.md", "1")
    t.scan()
    notes.write("notes/n.md", "22")
    t.scan()
    os.rename(notes.root / "notes/n.md", notes.root / "notes/m.md")
    t.scan()
    assert t.changes_since("p", 0).changes == [Change(C, "notes/m.md")]
    assert t.changes_since("p", 1).changes == [
        Change(M, "notes/m.md"),
        Change(R, "notes/m.md", "notes/n.md"),
    ]


def test_config_change_logs_what_entered_and_left(notes: Workspace) -> None:
    notes.configure({"p": {"include": ["other"]}})
    changes = logged(notes)
    config = [c for c in changes if c.kind is ChangeKind.CONFIG]
    assert len(config) == 1 and config[0].detail is not None
    assert config[0].detail["include_added"] == ["other"]
    assert config[0].detail["include_removed"] == ["notes"]
    assert config[0].detail["newly_included"] == ["other/c.md"]
    paths = [(c.kind, c.path, c.detail) for c in changes if c.kind is not ChangeKind.CONFIG]
    unincluded = {"why": "unincluded", "pattern": "notes"}
    assert paths == [(ChangeKind.LEFT, "notes/a.md", unincluded),
                     (ChangeKind.LEFT, "notes/b.md", unincluded),
                     (ChangeKind.ENTERED, "other/c.md", {"why": "included", "pattern": "other"})]


def test_a_file_created_with_a_scope_change_never_left_the_old_scope(notes: Workspace) -> None:
    """A new file the old scope would have held was never in the project: not deleted
    (test_session_stateful found this)."""
    notes.configure({"p": {"include": ["other"]}})
    notes.write("notes/new.md", "x")
    changes = logged(notes)
    assert (D, "notes/new.md") not in [(c.kind, c.path) for c in changes]
    config = next(c for c in changes if c.kind is ChangeKind.CONFIG)
    assert config.detail is not None and "notes/new.md" not in config.detail["no_longer_included"]


def test_a_tracker_built_before_a_config_edit_flushes_with_the_new_config(
    notes: Workspace,
) -> None:
    old = notes.tracker()  # a long-running process (a watcher) holds this one
    notes.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    notes.tracker().scan()
    notes.write("other/new.md", "x")
    result = old.scan()
    assert [c.path for c in result.projects["q"].changes] == ["other/new.md"]
    assert old.epoch("q") == 1


def test_equivalent_patterns_are_no_config_change(notes: Workspace) -> None:
    notes.configure({"p": {"include": ["./notes/"]}})
    assert logged(notes) == []


def test_a_project_back_after_removal_asks_readers_to_re_enumerate(notes: Workspace) -> None:
    notes.write("notes/x.md", "x")
    assert [c.path for c in logged(notes)] == ["notes/x.md"]
    notes.configure({"q": {"include": ["other"]}})
    notes.tracker().scan()
    notes.write("notes/y.md", "made while p was gone")
    notes.tracker().scan()
    notes.configure({"p": {"include": ["notes"]}})
    t = notes.tracker()
    t.scan()
    assert t.epoch("p") == 2
    assert t.changes_since("p", 1).compacted
    assert not t.changes_since("p", 2).compacted


def test_an_ignore_entry_removed_brings_its_files_in_even_on_a_hinted_flush(
    ws: Workspace,
) -> None:
    ws.write("n/a.md", "a")
    ws.write("n/build/out.md", "generated")
    ws.configure({"p": {"include": ["n"]}}, ignore=["n/build"])
    t = ws.tracker()
    t.scan()
    assert t.store.index_get("n/build/out.md") is None
    ws.configure({"p": {"include": ["n"]}})
    result = t.scan(["n/a.md"])  # only a hint for another file
    assert result.full
    entered = [c for c in result.projects["p"].changes if c.kind is ChangeKind.ENTERED]
    assert entered == [Change(ChangeKind.ENTERED, "n/build/out.md", detail={"why": "unignored"})]


def test_the_index_stats_cache_follows_writes_by_other_connections(ws: Workspace) -> None:
    old = time.time() - 10
    for i in range(4):
        os.utime(ws.write(f"n/{i}.md", f"note {i}\n"), (old, old))
    ws.configure({"p": {"include": ["n"]}})
    mine, other = ws.tracker(), ws.tracker()  # two processes' connections
    mine.scan()
    assert mine.scan().projects == {}  # the cache is warm now
    os.utime(ws.write("n/0.md", "changed elsewhere\n"), (old + 1, old + 1))
    assert [c.path for c in other.scan().projects["p"].changes] == ["n/0.md"]
    assert mine.scan().projects == {}  # logged once, by the other process
    (ws.root / "n/1.md").unlink()
    assert [(c.kind, c.path) for c in mine.scan().projects["p"].changes] == [(D, "n/1.md")]
    raw = sqlite3.connect(ws.root / ".freshline/freshline.db")
    raw.execute("UPDATE files SET size = 999 WHERE path = ?", (b"n/2.md",))
    raw.commit()
    raw.close()
    mine.scan()
    entry = mine.store.index_get("n/2.md")
    assert entry is not None and entry.size == len("note 2\n")


def test_no_note_is_parsed_inside_a_write_transaction(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes.configure({"p": {"include": ["notes", "#paper"]}})  # notes are parsed
    t = notes.tracker()
    t.scan()
    inside: list[bool] = []
    real = scan_module.parse_note

    def checking(head: bytes) -> object:
        inside.append(t.store.db.conn.in_transaction)
        return real(head)

    monkeypatch.setattr(scan_module, "parse_note", checking)
    notes.write("notes/a.md", "# A #x\n")
    notes.write("notes/c.md", "new #y\n")
    t.store.hints_add(["notes/a.md", "notes/c.md"])
    alive = Liveness(t.store)  # a watcher holds its lock: the flush trusts the hints
    assert alive.hold()
    assert not t.flush(sync=False).full
    notes.write("notes/b.md", "edited\n")
    assert t.flush(full=True).full
    assert inside and not any(inside)


def test_a_write_during_the_scan_is_seen_by_a_redo_under_the_lock(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes.configure({"p": {"include": ["notes", "#paper"]}})  # notes are parsed
    notes.tracker().scan()
    t, other = notes.tracker(), notes.tracker()  # the other: a watcher in another process
    real = scan_module.parse_note
    parsed: list[bytes] = []

    def interfering(head: bytes) -> object:
        if not parsed:  # while the first pass runs, a note changes and its hint comes in
            notes.write("notes/b.md", "changed meanwhile #late\n")
            other.store.hints_add(["notes/b.md"])
        parsed.append(head)
        return real(head)

    monkeypatch.setattr(scan_module, "parse_note", interfering)
    notes.write("notes/a.md", "# A edited\n")
    t.store.hints_add(["notes/a.md"])
    alive = Liveness(t.store)
    assert alive.hold()
    result = t.flush(sync=False)
    assert not result.full
    assert [c.path for c in result.projects["p"].changes] == ["notes/a.md", "notes/b.md"]
    assert parsed == [b"# A edited\n", b"changed meanwhile #late\n"]  # a.md hashed once
    assert t.store.hints_peek() == []


def test_the_listing_after_a_first_flush_is_what_it_wrote_until_another_writes(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        ws.write(f"n/{i}.md", f"note {i} #t\n")
    ws.write("n/\udcff.md", "an odd name sorts by its bytes\n")
    ws.configure({"p": {"include": ["n"]}, "q": {"include": ["#t"]}})
    mine, other = ws.tracker(), ws.tracker()  # two processes' connections
    mine.scan()
    expected = {name: other.files_in_scope(name) for name in ("p", "q")}
    reads: list[bool] = []
    real = mine.store.index_iter
    monkeypatch.setattr(mine.store, "index_iter", lambda *a: reads.append(True) or real(*a))
    assert {name: mine.files_in_scope(name) for name in ("p", "q")} == expected
    assert reads == []  # the flush of the empty index wrote all of it
    ws.write("n/new.md", "new #t\n")
    other.scan()
    assert "n/new.md" in [e.path for e in mine.files_in_scope("q")]
    assert reads


@pytest.mark.parametrize(
    ("paths", "roots"),
    [
        (["a", "a/b", "a-b", "a-b/c", "a/b/c"], ["a", "a-b"]),  # "a-b" sorts between "a", "a/b"
        (["x/y", "x", "x/y"], ["x"]),
        (["b/c", "b/d", "e"], ["b/c", "b/d", "e"]),
        ([], []),
    ],
)
def test_the_outermost_hinted_paths_are_scanned_once(paths: list[str], roots: list[str]) -> None:
    assert outermost(paths) == roots


@given(st.lists(st.lists(st.sampled_from(["a", "b", "a-b", "a.b"]), min_size=1, max_size=4)
                .map("/".join), max_size=30))
def test_the_outermost_paths_are_those_below_no_other(paths: list[str]) -> None:
    naive = sorted({p for p in paths
                    if not any(p.startswith(o + "/") for o in paths if o != p)})
    assert outermost(paths) == naive

