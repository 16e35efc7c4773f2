"""The context blocks: golden files per scenario, table tests of the edges, properties.

Regenerate the golden files with `FRESHLINE_UPDATE_GOLDEN=1 pytest tests/test_context_blocks.py`
and review the diff.
"""

from __future__ import annotations

import os
import posixpath
import random
import re
from collections import defaultdict
from enum import Enum
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.context import (
    ConfigChange,
    DocumentInfo,
    ManifestInput,
    Refresh,
    Source,
    SourceKind,
    StaleRead,
    UpdatesInput,
    render_manifest,
    render_updates,
)
from freshline.context.wire import absolute, short_commit, show_path, show_text
from freshline.errors import ConfigError, FreshlineError, WorkspaceError
from freshline.materialize.status import DocStatus
from freshline.store.records import Change, ChangeGroup, ChangeKind

GOLDEN = Path(__file__).parent / "golden"
ROOT = "/home/u/vault"
SNAP = ".freshline/snapshots"
K = ChangeKind


def doc(path: str, state: str, reason: str | None = None) -> DocumentInfo:
    stem = posixpath.splitext(posixpath.basename(path))[0]
    snapshot = f"{SNAP}/{stem}.md" if state in ("ready", "stale", "deleted") else None
    return DocumentInfo(path, DocStatus(state), snapshot, reason)


# ---------------------------------------------------------------- golden scenarios

def manifest_scenarios() -> dict[str, ManifestInput]:
    include = ["Research/Papers", "notes/**/*.md", "*.pdf", "#paper", "[[Reading List]]",
               "[status:active]"]
    docs = [doc("Research/Papers/attention.pdf", "ready"), doc("inbox/scan.pdf", "pending"),
            doc("Research/Papers/old draft.pdf", "stale"),
            doc("Research/Papers/locked.pdf", "failed", "encrypted PDF: a password is needed"),
            doc("gone.pdf", "deleted")]
    base = dict(project="research", root=ROOT, epoch=12, include=include,
                exclude=["Research/Papers/old", "#draft"], documents=docs)
    many = [f"notes/n{i:03}.md" for i in range(120)]
    return {
        "manifest_small": ManifestInput(**base, files=[
            "Research/Papers/attention.pdf", "notes/idea.md", "Reading List.md"]),
        "manifest_large": ManifestInput(**base, files=many),
        "manifest_resumed": ManifestInput(**base, resumed=True, mode="isolated"),
        "manifest_empty": ManifestInput(project="empty", root=ROOT, epoch=0, files=[]),
        "manifest_folders": ManifestInput(
            project="big", root=ROOT, epoch=7, include=["notes", "README.md"], list_files_max=6,
            files=["README.md", *many[:3], *(f"notes/{y}/{m:02}/n{i}.md" for y in (2023, 2024)
                                               for m in range(1, 13) for i in range(3))]),
        "manifest_unicode": ManifestInput(
            project='Ré "search" <1>', root="/", epoch=3, include=["Été 2024/Notes", "#café"],
            files=["Été 2024/Notes/naïve idea.md", "Été 2024/Notes/日本語 メモ.md",
                   "Été 2024/Notes/line\nbreak.md", "Été 2024/Notes/trailing .md "]),
    }


def updates_scenarios() -> dict[str, UpdatesInput]:
    def u(**kw: object) -> UpdatesInput:
        kw.setdefault("changes", ())
        return UpdatesInput.from_changes("research", ROOT, 3, 5, **kw)

    many = [Change(K.CREATED, f"notes/n{i:03}.md") for i in range(8)]
    return {
        "updates_paths": u(changes=[
            Change(K.CREATED, "notes/new.md"), Change(K.MODIFIED, "notes/todo.md"),
            Change(K.DELETED, "notes/old.md"), Change(K.RENAMED, "notes/b.md", "notes/a.md")]),
        # the tracker logs a rename out as deleted old, a rename in as created new
        "updates_rename_scope": u(changes=[
            Change(K.DELETED, "Research/moved-out.md"), Change(K.CREATED, "Research/moved-in.md"),
            Change(K.RENAMED, "Research/Papers/new name.md", "Research/Papers/old name.md"),
            Change(K.RENAMED, "Research/Ideas", "Research/Drafts", {"folder": True}),
            Change(K.RENAMED, "Research/Ideas/a.md", "Research/Drafts/a.md")]),
        "updates_documents": u(
            changes=[Change(K.CREATED, "in/new.pdf"), Change(K.MODIFIED, "in/ready.pdf"),
                     Change(K.MODIFIED, "in/stale.pdf"), Change(K.CREATED, "in/bad.pdf"),
                     Change(K.DELETED, "in/gone.pdf"),
                     Change(K.RENAMED, "out/moved.pdf", "in/moved.pdf")],
            documents=[doc("in/new.pdf", "pending"), doc("in/ready.pdf", "ready"),
                       doc("in/stale.pdf", "stale"), doc("in/bad.pdf", "failed", "corrupt"),
                       doc("in/gone.pdf", "deleted"), doc("in/moved.pdf", "deleted"),
                       doc("out/moved.pdf", "pending")]),
        "updates_document_sets": u(
            ready_documents=[doc("in/new.pdf", "ready")],
            failed_documents=[doc("in/bad.pdf", "failed", "timed out after 60 s"),
                              doc("in/huge.xlsx", "failed")],
            invalid_snapshots=[("in/left-scope.pdf", f"{SNAP}/left-scope.md")]),
        # the tracker's detail shape; the paths a scope change moves in or out are logged
        # as entered or left, with the reason
        "updates_config": u(changes=[
            Change(K.CONFIG, "", detail={
                "include_added": ["#paper", "Drafts"], "include_removed": ["*.txt"],
                "exclude_added": ["Drafts/private"], "exclude_removed": ["#draft"],
                "ignore_added": ["*.tmp"], "mode": {"from": "live", "to": "isolated"},
                "newly_included": ["Drafts/idea.md", "Drafts/gone-again.md", "Research/p.md"],
                "no_longer_included": ["old/x.md"]}),
            Change(K.CONFIG, "", detail={"newly_included": ["Drafts/idea.md"]}),
            Change(K.ENTERED, "Drafts/idea.md", detail={"why": "included", "pattern": "Drafts"}),
            Change(K.ENTERED, "Research/p.md", detail={"why": "included", "pattern": "#paper"}),
            Change(K.LEFT, "old/x.txt", detail={"why": "unincluded", "pattern": "*.txt"}),
            Change(K.LEFT, "Drafts/private/a.md",
                   detail={"why": "excluded", "pattern": "Drafts/private"}),
            Change(K.CREATED, "notes/plain-new.md"), Change(K.DELETED, "old/x.md")],
            documents=[doc("Research/p.md", "ready")]),
        "updates_scope_content": u(changes=[
            Change(K.LEFT, "notes/Version history.md",
                   detail={"why": "tagged", "pattern": "#personal"}),
            Change(K.LEFT, "m/phone.md",
                   detail={"why": "property", "pattern": "[mobile:true]", "value": "false"}),
            Change(K.ENTERED, "m/desk.md",
                   detail={"why": "property", "pattern": "[mobile:true]", "value": "true"}),
            Change(K.ENTERED, "notes/back.md", detail={"why": "untagged", "pattern": "#personal"}),
            Change(K.ENTERED, "notes/unknown.md")]),
        "updates_folded": u(
            changes=[Change(K.CREATED, "Bulk/sub19/new.md")],
            folded=[ChangeGroup(5, 9, "Bulk/sub03", {"created": 100}),
                    ChangeGroup(5, 5, "Bulk/sub04", {"created": 99, "deleted": 1, "left": 2}),
                    ChangeGroup(6, 8, "", {"modified": 1}),
                    ChangeGroup(7, 7, entry=Change(K.GIT, "", detail={
                        "operation": "checkout", "from": "a1b2c3d4" * 5, "to": "e4f5a6b7" * 5,
                        "count": 1204})),
                    ChangeGroup(8, 8, entry=Change(K.CONFIG, "",
                                                   detail={"include_added": ["x"]}))]),
        "updates_compacted": u(
            changes=[Change(K.COMPACTED, ""), Change(K.CREATED, "notes/dropped.md"),
                     Change(K.CONFIG, "", detail={"include_added": ["x"]})],
            ready_documents=[doc("in/new.pdf", "ready")]),
        "updates_refreshed": u(changes=[
            Change(K.REFRESHED, "", detail={
                "target": "main", "from": "0123456789abcdef" * 2 + "01234567",
                "to": "fedcba9876543210" * 2 + "fedcba98",
                "paths": ["src/app.py", "README.md"], "conflicts": ["src/db.py", "CHANGES.rst"],
                "conflict_kinds": {"src/db.py": "content", "CHANGES.rst": "modify/delete"}}),
            Change(K.REFRESHED, "", detail={"target": "release/2.x", "from": "v1", "to": "v2"})]),
        "updates_resumed": u(resumed=True),
        "updates_git": u(changes=[
            *many, Change(K.DELETED, "x.md"),
            Change(K.GIT, "", detail={"operation": "checkout", "from": "a1b2c3d4" * 5,
                                      "to": "e4f5a6b7" * 5, "paths": ["x.md", "notes/n001.md"],
                                      "count": 2}),
            Change(K.GIT, "", detail={"operation": "commit", "from": "", "to": "e4f5a6b7" * 5}),
            Change(K.GIT, "", detail={"operation": "other", "from": "e4f5a6b7" * 5,
                                      "to": "0123abcd" * 5, "paths": ["y.md"]})]),
        "updates_ledger": UpdatesInput.from_changes(
            "notes", ROOT, 4, 6, [
                Change(K.MODIFIED, "notes/plan.md"), Change(K.CREATED, "notes/c.md"),
                Change(K.RENAMED, "notes/new.md", "notes/old.md"),
                Change(K.DELETED, "src/gone.py"), Change(K.MODIFIED, "src/app.py"),
                Change(K.MODIFIED, "notes/shared.md"),
                Change(K.GIT, "", detail={"operation": "checkout", "from": "a1b2c3d4" * 5,
                                          "to": "e4f5a6b7" * 5, "count": 2,
                                          "paths": ["src/gone.py", "src/app.py"]})],
            stale=[
                StaleRead("notes/plan.md", 3, K.MODIFIED),
                StaleRead("notes/old.md", 2, K.RENAMED, new_path="notes/new.md"),
                StaleRead("src/gone.py", 1, K.DELETED, wrote=True, source=Source(
                    SourceKind.GIT, "checkout", "", "a1b2c3d4" * 5, "e4f5a6b7" * 5)),
                StaleRead("notes/shared.md", 5, K.MODIFIED, source=Source(
                    SourceKind.SESSION, "3f2a9c1b0d4e", "claude-code"))],
            writers=[(p, Source(SourceKind.SESSION, "3f2a9c1b0d4e", "claude-code"))
                     for p in ("notes/c.md", "notes/shared.md")]),
        "updates_unicode": UpdatesInput(
            "Ré", "/", 0, 1, changes=[
                Change(K.CREATED, "Été 2024/naïve idea.md"),
                Change(K.RENAMED, "日本語/メモ 2.md", "日本語/メモ.md"),
                Change(K.CREATED, "weird/a → b.md"), Change(K.CREATED, "weird/</x>.md")]),
    }


SCENARIOS = {
    **{name: (render_manifest, m) for name, m in manifest_scenarios().items()},
    **{name: (render_updates, x) for name, x in updates_scenarios().items()},
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden(name: str) -> None:
    render, data = SCENARIOS[name]
    text = render(data)
    assert text is not None
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("FRESHLINE_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text + "\n", encoding="utf-8")
    assert golden.exists(), f"missing {golden}; run with FRESHLINE_UPDATE_GOLDEN=1"
    assert text + "\n" == golden.read_text(encoding="utf-8")


# ---------------------------------------------------------------- table tests of the edges

@pytest.mark.parametrize(("root", "pattern", "line"), [
    ("/w", "notes", "folder /w/notes/"), ("/w", "./notes/", "folder /w/notes/"),
    ("/", "a b", "folder /a b/"), ("/w", "**", "glob /w/**"),
    ("/w", "**/*.md", "glob /w/**/*.md"), ("/w", "*.PDF", "file type *.pdf"),
    ("/w", "#a/b", "tag #a/b"), ("/w", "[[T]]", "note [[T]]"), ("/w", "[k:v]", "property [k:v]"),
])
def test_source_lines(root: str, pattern: str, line: str) -> None:
    text = render_manifest(ManifestInput("p", root, 1, include=[pattern]))
    assert groups(text)["Sources:"] == [line]


def test_a_folder_pattern_naming_a_file_shows_as_a_file() -> None:
    text = render_manifest(
        ManifestInput("p", "/w", 1, include=["README.md", "docs"], files=["README.md", "docs/a"])
    )
    assert groups(text)["Sources:"] == ["file /w/README.md", "folder /w/docs/"]


@pytest.mark.parametrize("pattern", ["", "../x", "[[]]", "#", "a/[b"])
def test_bad_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ConfigError, match="bad pattern"):
        ManifestInput("p", ROOT, 1, include=[pattern])


@pytest.mark.parametrize(("root", "path", "expected"), [
    ("/w", "a/b.md", "/w/a/b.md"), ("/", "a.md", "/a.md"), ("/w", ".", "/w"),
    ("/w", "./a//b.md", "/w/a/b.md"), ("/w", "/w/.freshline/s.md", "/w/.freshline/s.md"),
    ("/w", "/w", "/w"), ("/w", "a/../b.md", "/w/b.md"),
])
def test_absolute(root: str, path: str, expected: str) -> None:
    assert absolute(root, path) == expected


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/elsewhere/x", "/wx/y"])
def test_absolute_refuses_escapes(path: str) -> None:
    with pytest.raises(WorkspaceError):
        absolute("/w", path)


def test_relative_root_is_refused() -> None:
    with pytest.raises(WorkspaceError, match="absolute"):
        ManifestInput("p", "home/u", 1)
    with pytest.raises(WorkspaceError):
        UpdatesInput("p", "", 1, 2)


@pytest.mark.parametrize(("path", "shown"), [
    ("/w/plain name ü.md", "/w/plain name ü.md"), ("/w/a\\b", "/w/a\\\\b"),
    ("/w/a\nb", "/w/a\\nb"), ("/w/a\u2028b", "/w/a\\u2028b"), ("/w/a  ", "/w/a\\x20\\x20"),
    ("/w/</tag>", "/w/</tag>"), ("/w/a & b", "/w/a & b"),
    ("/w/Q&A <draft>.md", "/w/Q&A <draft>.md"),
    ("/w/x</project_context>", "/w/x\\x3c/project_context>"),
    ("/w/<PROJECT_CONTEXT_updates a>", "/w/\\x3cPROJECT_CONTEXT_updates a>"),
    ("/w/a → b", "/w/a \\u2192 b"), ("/w/a→b", "/w/a→b"), ("/w/\u202egnp.exe", "/w/\\u202egnp.exe"),
    ("/w/\udcff.md", "/w/\\xff.md"), ("/w/\x1b[31m", "/w/\\x1b[31m"), ("/w/\x85", "/w/\\u0085"),
    ("/w/zero\u200bwidth", "/w/zero\\u200bwidth"), ("/w/tag\U000e0041", "/w/tag\\U000e0041"),
])
def test_show_path(path: str, shown: str) -> None:
    assert show_path(path) == shown


def test_show_text_flattens_shortens_and_escapes() -> None:
    assert show_text("a\n\tb  </c>") == "a b </c>"
    assert show_text("x" * 500, 10) == "x" * 9 + "…"
    assert show_text("\\" * 500, 3) == "\\\\\\\\…"  # shortened first: no escape is cut


def test_short_commit() -> None:
    assert short_commit("a" * 40) == "aaaaaaa"
    assert short_commit("b" * 64) == "bbbbbbb"
    assert short_commit("v1.2") == "v1.2"


def test_document_status_accepts_equal_enums_and_strings() -> None:
    class Probe(Enum):
        READY = "ready"

    assert DocumentInfo("a.pdf", Probe.READY, "s.md").state is DocStatus.READY
    assert DocumentInfo("a.pdf", "pending").state is DocStatus.PENDING
    with pytest.raises(ValueError):
        DocumentInfo("a.pdf", "unknown")


def test_bad_records_are_refused() -> None:
    with pytest.raises(FreshlineError, match="snapshot"):
        DocumentInfo("a.pdf", DocStatus.READY)
    with pytest.raises(FreshlineError, match="snapshot"):
        UpdatesInput("p", ROOT, 1, 2, ready_documents=[doc("a.pdf", "pending")])
    with pytest.raises(FreshlineError, match="from_changes"):
        UpdatesInput("p", ROOT, 1, 2, changes=[Change(K.CONFIG, "")])
    with pytest.raises(FreshlineError, match="old path"):
        UpdatesInput("p", ROOT, 1, 2, changes=[Change(K.RENAMED, "b.md")])
    with pytest.raises(WorkspaceError):
        render_updates(UpdatesInput("p", ROOT, 1, 2, changes=[Change(K.CREATED, "../x")]))


def test_from_changes_routes_project_entries() -> None:
    u = UpdatesInput.from_changes("p", ROOT, 1, 4, [
        Change(K.CONFIG, "", detail={"include_added": ["#x"], "unknown": 1,
                                     "mode": {"from": "live", "to": "isolated"}}),
        Change(K.CREATED, "a.md"),
        Change(K.REFRESHED, "", detail={"target": "main", "from": "a", "to": "b", "paths": ["x"]}),
        Change(K.COMPACTED, "")])
    assert u.changes == (Change(K.CREATED, "a.md"),)
    assert u.config == (ConfigChange(include_added=["#x"], mode_from="live",
                                     mode_to="isolated"),)
    assert u.refreshed == (Refresh("main", "a", "b", ("x",)),)
    assert u.compacted


def test_compacted_lists_nothing_else_from_the_log() -> None:
    text = render_updates(updates_scenarios()["updates_compacted"])
    assert text is not None and "the change log no longer reaches your last turn" in text.lower()
    assert "re-enumerate" not in text
    assert "dropped.md" not in text and "Scope changed" not in text
    assert "/home/u/vault/in/new.pdf" in text  # the session's own document sets stay


def test_nothing_to_say_is_none() -> None:
    assert render_updates(UpdatesInput("p", ROOT, 4, 4)) is None
    assert render_updates(UpdatesInput("p", ROOT, 4, 5, documents=[doc("a.pdf", "ready")])) \
        is None


def test_manifest_leaves_out_deleted_documents_and_unknown_files() -> None:
    text = render_manifest(ManifestInput("p", ROOT, 1, include=["x"],
                                         documents=[doc("x/gone.pdf", "deleted")]))
    assert "gone" not in text and "Files" not in text


def test_manifest_with_exactly_the_small_limit_lists_files() -> None:
    files = [f"n{i}.md" for i in range(3)]
    listed = render_manifest(ManifestInput("p", ROOT, 1, files=files, list_files_max=3))
    counted = render_manifest(ManifestInput("p", ROOT, 1, files=files, list_files_max=2))
    assert "Files (3):" in listed and f"- {ROOT}/n2.md" in listed
    assert f"- {ROOT}/: 3 files" in counted and "n2.md" not in counted


def test_blocks_are_wrapped_in_their_tags() -> None:
    m = render_manifest(ManifestInput("p&q", ROOT, 9, include=["x"]))
    assert m.startswith('<project_context project="p&q" workspace="/home/u/vault" '
                        'epoch="9" mode="live">\n')
    assert m.endswith("\n</project_context>")
    u = render_updates(UpdatesInput("p", ROOT, 2, 9, resumed=True))
    assert u is not None
    assert u.startswith('<project_context_updates project="p" from_epoch="2" to_epoch="9">\n')
    assert u.endswith("\n</project_context_updates>")


# ---------------------------------------------------------------- properties

GROUP_LINE = re.compile(r"(/.*/): (\d[\d,]*) (.+)")
PATH_GROUPS = {K.CREATED: "Created:", K.MODIFIED: "Modified:", K.DELETED: "Deleted:",
               K.RENAMED: "Renamed:"}

segments = st.text("abXY09 -_.éü日本", min_size=1, max_size=5).filter(
    lambda s: s not in (".", "..") and not s.endswith(" "))
rel_paths = st.lists(segments, min_size=1, max_size=3).map("/".join)
patterns = st.sampled_from(["notes", "a b/c", "#paper", "*.pdf", "n/**/*.md", "[[T]]", "[k:v]"])


@st.composite
def path_changes(draw: st.DrawFn) -> Change:
    kind = draw(st.sampled_from(list(PATH_GROUPS)))
    old = draw(rel_paths) if kind is K.RENAMED else None
    return Change(kind, draw(rel_paths), old)


def groups(text: str) -> dict[str, list[str]]:
    """Each heading's entries."""
    found: dict[str, list[str]] = defaultdict(list)
    heading = ""
    for line in text.split("\n")[1:-1]:
        if line.startswith("- "):
            found[heading].append(line[2:])
        else:
            heading = line
    return found


def expected_entry(change: Change) -> str:
    new = f"{ROOT}/{change.path}"
    return f"{ROOT}/{change.old_path} → {new}" if change.old_path else new


@given(st.lists(path_changes(), max_size=12), st.data())
def test_updates_name_every_path_without_a_budget(changes: list[Change], data: st.DataObject,
                                                  ) -> None:
    paths = sorted({p for c in changes for p in (c.path, c.old_path) if p})
    states = data.draw(st.lists(st.sampled_from(list(DocStatus)), max_size=len(paths)))
    docs = [DocumentInfo(p, s, f"{SNAP}/{i}.md", "why") for i, (p, s) in
            enumerate(zip(paths, states, strict=False))]
    text = render_updates(UpdatesInput("p", ROOT, 1, 2, changes=changes, documents=docs))
    assert (text is None) == (not changes)
    found = groups(text or "")
    renamed = {c.path for c in changes if c.kind is K.RENAMED}
    for kind, heading in PATH_GROUPS.items():
        shown = [entry.split(" (")[0] for entry in found[heading]]  # no "(" in these paths
        assert len(set(shown)) == len(shown)
        # a path renamed and modified is one entry, on the rename's line
        told = [c for c in changes if c.kind is kind
                and not (kind is K.MODIFIED and c.path in renamed)]
        assert set(shown) == {expected_entry(c) for c in told}
    edited = {c.path for c in changes if c.kind is K.MODIFIED} & renamed
    for entry in found["Renamed:"]:
        target = entry.split(" (")[0].split(" → ")[1][len(ROOT) + 1:]
        assert ("its content changed too" in entry) == (target in edited)


@st.composite
def updates_inputs(draw: st.DrawFn) -> UpdatesInput:
    paths = st.lists(rel_paths, max_size=3)
    # a document has one state at a time: one entry per path
    docs = [DocumentInfo(p, draw(st.sampled_from(list(DocStatus))), f"{SNAP}/{i}.md", "why")
            for i, p in enumerate(draw(st.lists(rel_paths, max_size=3, unique=True)))]
    config = [ConfigChange(include_added=draw(st.lists(patterns, max_size=2)),
                           newly_included=draw(paths)) for _ in range(draw(st.integers(0, 2)))]
    refreshed = [Refresh("main", "a" * 40, "b" * 40, draw(paths), draw(paths))
                 for _ in range(draw(st.integers(0, 2)))]
    return UpdatesInput(
        "p", ROOT, 1, 2, changes=draw(st.lists(path_changes(), max_size=6)), documents=docs,
        ready_documents=[d for d in docs if d.state is DocStatus.READY],
        failed_documents=[doc(p, "failed", "x") for p in draw(paths)],
        invalid_snapshots=[(p, f"{SNAP}/{p}.md") for p in draw(paths)],
        compacted=draw(st.booleans()), config=config, refreshed=refreshed,
        resumed=draw(st.booleans()))


def shuffled(u: UpdatesInput, rnd: random.Random) -> UpdatesInput:
    def mix(items: tuple) -> list:
        items = list(items)
        rnd.shuffle(items)
        return items

    return UpdatesInput(
        u.project, u.root, u.from_epoch, u.to_epoch, changes=mix(u.changes),
        documents=mix(u.documents), ready_documents=mix(u.ready_documents),
        failed_documents=mix(u.failed_documents), invalid_snapshots=mix(u.invalid_snapshots),
        compacted=u.compacted, resumed=u.resumed, refreshed=u.refreshed,
        config=[ConfigChange(mix(c.include_added), newly_included=mix(c.newly_included))
                for c in u.config])


@given(updates_inputs(), st.randoms(use_true_random=False))
def test_updates_ignore_input_order(u: UpdatesInput, rnd: random.Random) -> None:
    assert render_updates(shuffled(u, rnd)) == render_updates(u)


@given(updates_inputs())
def test_updates_none_iff_nothing_to_say(u: UpdatesInput) -> None:
    log = (u.changes or u.config or u.refreshed) and not u.compacted
    sets = u.ready_documents or u.failed_documents or u.invalid_snapshots
    something = bool(log or sets or u.compacted or u.resumed)
    assert (render_updates(u) is not None) == something


@given(updates_inputs())
def test_updates_show_only_absolute_paths(u: UpdatesInput) -> None:
    text = render_updates(u) or ""
    for heading, entries in groups(text).items():
        if heading != "Scope changed:":  # entries there start with what changed
            assert all(e.startswith(ROOT + "/") for e in entries), heading


def manifest_entries(docs: list[tuple[str, DocStatus]]) -> dict[str, set[str]]:
    """What each document section must hold for `include=["notes"]`."""
    def entry(path: str, state: DocStatus) -> str:
        snapshot = f"{ROOT}/{SNAP}/{path}.md"
        return {DocStatus.READY: f"{ROOT}/{path} → {snapshot}",
                DocStatus.PENDING: f"{ROOT}/{path}",
                DocStatus.STALE: f"{ROOT}/{path} (older snapshot, may be out of date: {snapshot})",
                DocStatus.FAILED: f"{ROOT}/{path} (conversion failed: why)"}[state]

    def of(*states: DocStatus) -> set[str]:
        return {entry(p, s) for p, s in docs if s in states}

    return {
        "Sources:": {f"folder {ROOT}/notes/"},
        "Converted documents (source → snapshot):": of(DocStatus.READY),
        "Documents still converting (read the raw file for now; the snapshot follows on a "
        "later turn):": of(DocStatus.PENDING, DocStatus.STALE),
        "Failed documents:": of(DocStatus.FAILED),
    }


def assert_files_listed_or_grouped(text: str, files: list[str], list_max: int) -> None:
    """Every file is listed, or counted in a listed folder group; no more than `list_max`
    lines; the counts add up."""
    unique = set(files)
    found = {h: e for h, e in groups(text).items() if h.startswith("Files (")}
    if not unique:
        assert not found and ("Files: none in scope yet." in text)
        return
    [(heading, entries)] = found.items()
    assert heading == f"Files ({len(unique):,}):"
    assert len(entries) <= max(list_max, 1)
    listed = {e for e in entries if not GROUP_LINE.fullmatch(e)}
    folders = {m.group(1): int(m.group(2).replace(",", "")) for e in entries
               if (m := GROUP_LINE.fullmatch(e))}
    for f in unique:
        full = f"{ROOT}/{f}"
        assert (full in listed) != any(full.startswith(g) for g in folders), full
    assert len(listed) + sum(folders.values()) == len(unique)


@given(st.lists(rel_paths, max_size=15),
       st.lists(st.tuples(rel_paths, st.sampled_from(list(DocStatus))), max_size=8),
       st.integers(0, 10), st.randoms(use_true_random=False))
@settings(max_examples=150)
def test_manifest_names_every_path_or_counts_it(
    files: list[str], docs: list[tuple[str, DocStatus]], list_max: int, rnd: random.Random,
) -> None:
    def manifest() -> str:
        records = [DocumentInfo(p, s, f"{SNAP}/{p}.md", "why") for p, s in docs]
        return render_manifest(ManifestInput("p", ROOT, 1, include=["notes"], files=files,
                                             documents=records, list_files_max=list_max))

    text = manifest()
    rnd.shuffle(files)
    rnd.shuffle(docs)
    assert manifest() == text
    found = groups(text)
    for heading, entries in manifest_entries(docs).items():
        assert set(found[heading]) == entries
    assert_files_listed_or_grouped(text, files, list_max)


def test_modes_may_be_the_config_enum() -> None:
    from freshline.config import Mode

    m = render_manifest(ManifestInput("p", ROOT, 1, mode=Mode.ISOLATED))
    assert 'mode="isolated"' in m
    change = ConfigChange(mode_from=Mode.LIVE, mode_to=Mode.ISOLATED)
    u = render_updates(UpdatesInput("p", ROOT, 1, 2, config=[change]))
    assert u is not None and "- mode: live → isolated" in u


def test_a_scope_transition_is_told_with_its_reason_or_without_one() -> None:
    personal = {"why": "tagged", "pattern": "#personal"}
    u = UpdatesInput("p", ROOT, 1, 2, changes=[
        Change(K.LEFT, "a.md", detail=personal), Change(K.ENTERED, "b.md"),
        Change(K.ENTERED, "c.md", detail={"why": "someday", "pattern": "#x"}),
        Change(K.LEFT, "d.md", detail={"why": "tagged", "pattern": "[[bad"})])
    found = groups(render_updates(u) or "")
    assert found["Left the project (the files are still there):"] == [
        f"{ROOT}/a.md (now tagged #personal)", f"{ROOT}/d.md"]
    assert found["Entered the project:"] == [f"{ROOT}/b.md", f"{ROOT}/c.md"]
