"""The confined tools: list, read, search, write, edit, delete, chmod, on real files in
tmp_path."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.access import Rules
from freshline.agent import Toolbox, ToolCall, ToolMode, ToolResult
from freshline.materialize import DocStatus, Probe


def call(box: Toolbox, name: str, **args: object) -> ToolResult:
    return box.run(ToolCall("c1", name, dict(args)))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("# A\nalpha line\nbeta line\n")
    (ws / "notes" / "b.md").write_text("gamma\nALPHA upper\n")
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (ws / "run.sh").chmod(0o755)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".freshline").mkdir()
    (ws / ".freshline" / "store.db").write_text("secret")
    (tmp_path / "outside.txt").write_text("outside secret\n")
    return ws


@pytest.fixture
def live(root: Path) -> Toolbox:
    return Toolbox(root, "live")


@pytest.fixture
def isolated(root: Path) -> Toolbox:
    return Toolbox(root, ToolMode.ISOLATED)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- which tools are offered -------------------------------------------------------------------


def test_live_mode_offers_read_only_tools(live: Toolbox) -> None:
    assert [spec.name for spec in live.specs()] == ["list", "read", "search"]


def test_isolated_mode_adds_write_edit_delete_chmod(isolated: Toolbox, root: Path) -> None:
    names = [spec.name for spec in isolated.specs()]
    assert names == ["list", "read", "search", "write", "edit", "delete", "chmod"]
    without = Toolbox(root, "isolated", offer_chmod=False)
    assert "chmod" not in [spec.name for spec in without.specs()]


def test_every_spec_is_an_object_schema_with_its_required_properties(isolated: Toolbox) -> None:
    for spec in isolated.specs():
        assert spec.parameters["type"] == "object"
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])
        assert spec.description


def test_write_in_live_mode_is_refused(live: Toolbox, root: Path) -> None:
    result = call(live, "write", path="new.md", content="x")
    assert result.is_error and "live mode" in result.content
    assert not (root / "new.md").exists()


def test_unknown_tool_is_an_error_result(live: Toolbox) -> None:
    result = call(live, "rm", path="x")
    assert result.is_error and "unknown tool" in result.content and result.call_id == "c1"


# --- confinement -------------------------------------------------------------------------------

REFUSED = [
    ("../outside.txt", "escapes the workspace"),
    ("notes/../../outside.txt", "escapes the workspace"),
    ("notes\\..\\..\\outside.txt", "escapes the workspace"),
    ("freshline.toml", "internal path"),
    ("/etc/passwd", "outside the workspace"),
    (".git/config", "internal path"),
    (".freshline/store.db", "internal path"),
    ("notes/../.freshline/store.db", "internal path"),
    ("", "a path is required"),
    ("a\0b", "NUL byte"),
]


@pytest.mark.parametrize(("path", "reason"), REFUSED)
def test_read_refuses_paths_that_leave_the_workspace(live: Toolbox, path: str, reason: str) -> None:
    result = call(live, "read", path=path)
    assert result.is_error and reason in result.content
    assert "secret" not in result.content


def test_absolute_path_of_outside_file_is_refused(live: Toolbox, root: Path) -> None:
    result = call(live, "read", path=str(root.parent / "outside.txt"))
    assert result.is_error and "outside the workspace" in result.content


def test_absolute_path_inside_is_accepted(live: Toolbox, root: Path) -> None:
    result = call(live, "read", path=str(root / "notes" / "a.md"))
    assert not result.is_error and "alpha line" in result.content


def test_symlink_escape_is_refused_for_read_write_list_and_search(
    isolated: Toolbox, root: Path
) -> None:
    (root / "leak.txt").symlink_to(root.parent / "outside.txt")
    (root / "leakdir").symlink_to(root.parent)
    for name, args in [
        ("read", {"path": "leak.txt"}),
        ("write", {"path": "leak.txt", "content": "pwned"}),
        ("edit", {"path": "leak.txt", "old": "outside", "new": "pwned"}),
        ("read", {"path": "leakdir/outside.txt"}),
        ("list", {"path": "leakdir"}),
        ("write", {"path": "leakdir/new.txt", "content": "x"}),
        ("delete", {"path": "leak.txt"}),
    ]:
        result = call(isolated, name, **args)
        assert result.is_error and "resolves outside" in result.content, (name, args)
    search = call(isolated, "search", pattern="secret")
    assert "outside secret" not in search.content
    assert (root.parent / "outside.txt").read_text() == "outside secret\n"
    assert not (root.parent / "new.txt").exists()


def test_symlink_inside_the_workspace_is_followed(live: Toolbox, root: Path) -> None:
    (root / "alias.md").symlink_to(root / "notes" / "a.md")
    result = call(live, "read", path="alias.md")
    assert not result.is_error and "alpha line" in result.content


def test_symlink_into_internal_dir_is_refused(live: Toolbox, root: Path) -> None:
    (root / "db").symlink_to(root / ".freshline" / "store.db")
    result = call(live, "read", path="db")
    assert result.is_error and "internal" in result.content


def test_symlink_loop_is_an_error_not_a_crash(live: Toolbox, root: Path) -> None:
    (root / "loop1").symlink_to(root / "loop2")
    (root / "loop2").symlink_to(root / "loop1")
    assert call(live, "read", path="loop1").is_error


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["..", ".", "notes", "x", ".git", ".freshline", "", "/"]), max_size=6)
)
def test_no_combination_of_segments_reads_outside_or_internal(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    ws = tmp_path_factory.mktemp("prop") / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("internal")
    (ws.parent / "x").write_text("outside")
    box = Toolbox(ws, "live")
    result = call(box, "read", path="/".join(parts) + "/HEAD" if parts else "HEAD")
    assert "internal" not in result.content or result.is_error
    result = call(box, "read", path="/".join(parts) if parts else "x")
    assert "outside" not in result.content or "outside the workspace" in result.content


# --- list --------------------------------------------------------------------------------------


def test_list_shows_dirs_files_and_hides_internal(live: Toolbox, root: Path) -> None:
    result = call(live, "list")
    lines = result.content.splitlines()
    assert lines[0] == f"{root}/ (2 entries)"
    assert lines[1:] == ["notes/", "run.sh  (18 bytes)"]


def test_list_caps_huge_directories(live: Toolbox, root: Path) -> None:
    (root / "many").mkdir()
    for i in range(510):
        (root / "many" / f"f{i:04}").write_text("")
    result = call(live, "list", path="many")
    assert "(510 entries)" in result.content and "... and 10 more entries" in result.content


def test_list_of_a_file_or_missing_dir_is_an_error(live: Toolbox) -> None:
    assert "use read" in call(live, "list", path="run.sh").content
    assert "no such directory" in call(live, "list", path="nope").content


# --- read --------------------------------------------------------------------------------------


def test_read_whole_file_and_line_ranges(live: Toolbox, root: Path) -> None:
    assert call(live, "read", path="notes/a.md").content == "# A\nalpha line\nbeta line\n"
    ranged = call(live, "read", path="notes/a.md", start=2, end=2).content
    assert ranged == f"[{root}/notes/a.md lines 2-2]\nalpha line\n"
    assert "lines 2-3" in call(live, "read", path="notes/a.md", start="2").content
    assert "fewer than 9 lines" in call(live, "read", path="notes/a.md", start=9).content


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"start": 0}, "start must be at least 1"),
        ({"start": 3, "end": 2}, "start must be at least 1"),
        ({"start": "two"}, "must be a int"),
        ({"start": True}, "must be a int"),
    ],
)
def test_read_rejects_bad_ranges(live: Toolbox, args: dict[str, object], message: str) -> None:
    result = call(live, "read", path="notes/a.md", **args)
    assert result.is_error and message in result.content


def test_read_missing_file_directory_and_missing_argument(live: Toolbox) -> None:
    assert "no such file" in call(live, "read", path="nope.md").content
    assert "use list" in call(live, "read", path="notes").content
    assert "missing argument 'path'" in call(live, "read").content


def test_read_binary_file_says_so(live: Toolbox, root: Path) -> None:
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + bytes(range(256)) * 4)
    result = call(live, "read", path="image.png")
    assert result.is_error and result.content == f"read: {root}/image.png: binary file, 1035 bytes"


def test_read_huge_file_is_capped_with_a_note(root: Path) -> None:
    box = Toolbox(root, "live", output_cap=1000)
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(100_000)))
    result = call(box, "read", path="big.txt")
    assert "output capped at 1000 characters" in result.content
    assert "read a line range" in result.content
    assert len(result.content) < 1300
    ranged = call(box, "read", path="big.txt", start=50_000, end=50_001).content
    assert ranged.endswith("line 49999\nline 50000\n")


def test_read_one_huge_line_is_capped(root: Path) -> None:
    box = Toolbox(root, "live", output_cap=100)
    (root / "one.json").write_text("x" * 10_000)
    assert len(call(box, "read", path="one.json", start=1).content) < 250
    assert len(call(box, "read", path="one.json").content) < 250


def test_read_empty_file(live: Toolbox, root: Path) -> None:
    (root / "empty.md").write_text("")
    assert call(live, "read", path="empty.md").content == f"({root}/empty.md is empty)"


# --- documents ---------------------------------------------------------------------------------


@pytest.fixture
def docs(root: Path) -> Toolbox:
    snapshots = root / ".freshline" / "snapshots"  # where the materializer keeps them
    snapshots.mkdir(parents=True)
    (snapshots / "paper.md").write_text("Converted paper text\nsecond page words\n")
    for name in ["paper.pdf", "old.pdf", "new.pdf", "broken.pdf", "gone.pdf"]:
        (root / name).write_bytes(b"%PDF-1.4\n\0binary")
    views = {
        "paper.pdf": Probe("paper.pdf", DocStatus.READY, snapshots / "paper.md"),
        "old.pdf": Probe("old.pdf", DocStatus.STALE, snapshots / "paper.md"),
        "new.pdf": Probe("new.pdf", DocStatus.PENDING),
        "broken.pdf": Probe("broken.pdf", DocStatus.FAILED, reason="encrypted"),
        "gone.pdf": Probe("gone.pdf", DocStatus.DELETED),
    }
    return Toolbox(root, "live", read_document=views.get)


def test_read_converted_document_reads_its_snapshot(docs: Toolbox, root: Path) -> None:
    result = call(docs, "read", path="paper.pdf")
    assert not result.is_error
    assert result.content.startswith(f"[text snapshot of {root}/paper.pdf]\n")
    assert "Converted paper text" in result.content
    assert "second page" in call(docs, "read", path="paper.pdf", start=2).content


def test_read_stale_pending_and_failed_documents(docs: Toolbox) -> None:
    assert "older snapshot" in call(docs, "read", path="old.pdf").content
    pending = call(docs, "read", path="new.pdf")
    assert not pending.is_error and "being converted" in pending.content
    failed = call(docs, "read", path="broken.pdf")
    assert failed.is_error and "failed (encrypted)" in failed.content
    assert "no such file" in call(docs, "read", path="gone.pdf").content


def test_search_reads_document_snapshots(docs: Toolbox, root: Path) -> None:
    result = call(docs, "search", pattern="page words")
    assert f"{root}/paper.pdf (snapshot):2: second page words" in result.content
    assert "new.pdf" not in result.content


# --- search ------------------------------------------------------------------------------------


def test_search_finds_lines_with_absolute_paths(live: Toolbox, root: Path) -> None:
    result = call(live, "search", pattern="alpha")
    assert result.content == f"{root}/notes/a.md:2: alpha line"
    insensitive = call(live, "search", pattern="alpha", ignore_case=True).content
    assert f"{root}/notes/b.md:2: ALPHA upper" in insensitive


def test_search_respects_scope_internal_dirs_and_binaries(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"alpha\0\0")
    (root / ".git" / "alpha").write_text("alpha")
    box = Toolbox(root, "live", Rules(admits=lambda rel: rel != "notes/b.md"))
    result = call(box, "search", pattern="(?i)alpha")
    assert result.content == f"{root}/notes/a.md:2: alpha line"


def test_search_within_a_path_and_no_matches(live: Toolbox) -> None:
    result = call(live, "search", pattern="zzz", path="notes")
    assert result.content == "no matches for /zzz/ in 2 files"
    assert "a.md:3" in call(live, "search", pattern="beta", path="notes/a.md").content


def test_search_invalid_regex_is_an_error(live: Toolbox) -> None:
    result = call(live, "search", pattern="(")
    assert result.is_error and "invalid regular expression" in result.content


def test_search_output_is_bounded(root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 1000)
    result = call(Toolbox(root, "live"), "search", pattern="hit")
    assert result.content.count("\n") == 200
    assert "stopped after 200 matches" in result.content


# --- write, edit, chmod ------------------------------------------------------------------------


def test_write_creates_files_and_parents(isolated: Toolbox, root: Path) -> None:
    result = call(isolated, "write", path="new/deep/file.md", content="hello\r\n")
    assert not result.is_error and result.changed == ("new/deep/file.md",)
    assert (root / "new" / "deep" / "file.md").read_bytes() == b"hello\r\n"
    assert "created" in result.content


def test_write_and_edit_preserve_the_mode(isolated: Toolbox, root: Path) -> None:
    script = root / "run.sh"
    edit = call(isolated, "edit", path="run.sh", old="echo hi", new="echo bye")
    assert not edit.is_error and edit.changed == ("run.sh",) and not edit.mode_changes
    assert mode_of(script) == 0o755 and "echo bye" in script.read_text()
    write = call(isolated, "write", path="run.sh", content="#!/bin/sh\nexit 0\n")
    assert not write.is_error and mode_of(script) == 0o755
    (root / "ro.md").write_text("x")
    (root / "ro.md").chmod(0o600)
    call(isolated, "edit", path="ro.md", old="x", new="y")
    assert mode_of(root / "ro.md") == 0o600


@pytest.mark.parametrize(
    ("old", "message"),
    [("missing", "not found"), ("line", "found 2 times"), ("", "must not be empty")],
)
def test_edit_must_match_exactly_once(
    isolated: Toolbox, root: Path, old: str, message: str
) -> None:
    before = (root / "notes" / "a.md").read_text()
    result = call(isolated, "edit", path="notes/a.md", old=old, new="X")
    assert result.is_error and message in result.content
    assert (root / "notes" / "a.md").read_text() == before


def test_edit_refuses_binary_missing_and_non_utf8(isolated: Toolbox, root: Path) -> None:
    (root / "b.bin").write_bytes(b"ab\0cd")
    assert "binary file, 5 bytes" in call(isolated, "edit", path="b.bin", old="a", new="b").content
    assert "use write" in call(isolated, "edit", path="nope.md", old="a", new="b").content
    (root / "latin.txt").write_bytes(b"caf\xe9 au lait " * 1000)
    assert call(isolated, "edit", path="latin.txt", old="caf", new="x").is_error


def test_write_refuses_a_directory_and_internal_paths(isolated: Toolbox, root: Path) -> None:
    assert "a directory" in call(isolated, "write", path="notes", content="x").content
    assert call(isolated, "write", path=".git/hooks/pre-commit", content="x").is_error
    assert not (root / ".git" / "hooks").exists()
    assert "missing argument 'content'" in call(isolated, "write", path="a.md").content


def test_delete_removes_a_file_and_records_it(isolated: Toolbox, root: Path) -> None:
    result = call(isolated, "delete", path="notes/a.md")
    assert not result.is_error and result.changed == ("notes/a.md",)
    assert not (root / "notes" / "a.md").exists()
    assert "no such file" in call(isolated, "delete", path="notes/a.md").content
    assert "a directory" in call(isolated, "delete", path="notes").content
    (root / "inner-link").symlink_to(root / "run.sh")
    assert "delete refuses links" in call(isolated, "delete", path="inner-link").content
    assert (root / "run.sh").exists()
    assert call(isolated, "delete", path=".git/config").is_error


def test_chmod_records_the_mode_change(isolated: Toolbox, root: Path) -> None:
    result = call(isolated, "chmod", path="notes/a.md", executable=True)
    assert result.mode_changes == {"notes/a.md": "100755"}
    assert mode_of(root / "notes" / "a.md") == 0o755
    result = call(isolated, "chmod", path="run.sh", executable=False)
    assert result.mode_changes == {"run.sh": "100644"} and mode_of(root / "run.sh") == 0o644
    assert call(isolated, "chmod", path="nope", executable=True).is_error


def test_output_cap_applies_to_every_result(root: Path) -> None:
    box = Toolbox(root, "isolated", output_cap=50)
    for i in range(20):
        (root / "notes" / f"long-name-number-{i}.md").write_text("")
    result = call(box, "list", path="notes")
    assert result.content.endswith("[output capped at 50 characters]")


def test_os_errors_become_error_results(isolated: Toolbox, root: Path) -> None:
    result = call(isolated, "write", path="run.sh/inside.md", content="x")
    assert result.is_error and result.content.startswith("write failed: ")
    assert (root / "run.sh").is_file()
