"""The differential self-test: the scenario matrix, in the three observation modes, equals
the truth; and `freshline selftest` runs the same matrix."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from typer.testing import CliRunner

from freshline.interfaces.cli import app
from freshline.interfaces.selftest import SCENARIOS, Mode, Scenario, Status, render, run_selftest
from freshline.interfaces.selftest.scenarios import Tree, note
from freshline.interfaces.selftest.truth import Content, Snapshot, expected_changes
from freshline.store.records import Change, ChangeKind

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED
runner = CliRunner()


def test_the_matrix_agrees_with_the_truth_in_every_mode(tmp_path: Path) -> None:
    outcomes = run_selftest(tmp_path)
    assert len(outcomes) == len(SCENARIOS) * len(Mode)
    table = "\n".join(render(outcomes))
    assert all(o.status is Status.OK for o in outcomes), table
    assert not os.listdir(tmp_path)  # its temporary directory is gone


def _hidden_edit_setup(t: Tree) -> None:
    t.write("old.md", "aaaa\n")
    past = time.time() - 3600
    os.utime(t.path("old.md"), (past, past))


def _hidden_edit(t: Tree) -> None:
    st = os.stat(t.path("old.md"))
    t.write("old.md", "bbbb\n")  # same size, same inode, and the old mtime put back
    os.utime(t.path("old.md"), ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_matrix_reports_what_no_mode_could_see(tmp_path: Path) -> None:
    # Like git, freshline trusts an old enough stat: an edit that forges it is invisible.
    blind = Scenario("an edit that forges its stat", _hidden_edit_setup, _hidden_edit)
    outcomes = run_selftest(tmp_path, [blind])
    assert {o.status for o in outcomes} == {Status.DIFFERS}
    assert all(o.missing == [Change(M, "old.md")] and not o.extra for o in outcomes)
    assert "  missing: modified old.md" in render(outcomes)


def snap(files: dict[str, str], dirs: set[str] | None = None) -> Snapshot:
    return Snapshot({p: Content(False, t.encode()) for p, t in files.items()}, dirs or set())


def test_truth_pairs_renames_on_content_only(tmp_path: Path) -> None:
    before = snap({"a.md": note("a"), "b.md": note("b"), "c.md": "cats\n"})
    after = snap({"x.md": note("a"), "y.md": note("b", "one more line\n"), "s.txt": "shop\n"})
    assert expected_changes(before, after, tmp_path) == [
        Change(D, "c.md"),
        Change(C, "s.txt"),
        Change(R, "x.md", "a.md"),
        Change(M, "y.md"),
        Change(R, "y.md", "b.md"),
    ]


def test_truth_pairs_identical_twins_in_path_order(tmp_path: Path) -> None:
    before = snap({"a.md": "same\n", "b.md": "same\n"})
    after = snap({"c.md": "same\n", "d.md": "same\n"})
    assert expected_changes(before, after, tmp_path) == [
        Change(R, "c.md", "a.md"), Change(R, "d.md", "b.md"),
    ]


def test_truth_summarizes_a_folder_moved_whole(tmp_path: Path) -> None:
    before = snap({"big/s/a.md": note(1), "big/b.md": note(2)}, {"big", "big/s"})
    after = snap({"new/s/a.md": note(1), "new/b.md": note(2)}, {"new", "new/s"})
    changes = expected_changes(before, after, tmp_path)
    assert changes[-1] == Change(R, "new", "big", {"folder": True})
    assert len(changes) == 3


def test_cli_runs_the_matrix_and_says_so_in_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["selftest", str(tmp_path), "--only", "rename over", "--json"])
    assert result.exit_code == 0, result.stdout
    data = json.loads(result.stdout)
    assert data["agree"] is True
    assert [(o["scenario"], o["mode"], o["status"]) for o in data["outcomes"]] == [
        ("rename over an existing file", mode.value, "ok") for mode in Mode
    ]


def test_cli_table_and_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["selftest", str(tmp_path), "--only", "case-only"])
    assert result.exit_code == 0
    assert "case-only rename" in result.stdout and "all agree with the truth" in result.stdout
    missing = runner.invoke(app, ["selftest", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a directory" in missing.stderr
    nothing = runner.invoke(app, ["selftest", str(tmp_path), "--only", "no such scenario"])
    assert nothing.exit_code == 2 and "no scenario matches" in nothing.stderr
