"""The command line in-process: output, exit codes and the state it leaves behind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.interfaces.cli import app
from freshline.interfaces.cli.answers import config_text

from .conftest import Workspace

runner = CliRunner()
README = Path(__file__).resolve().parents[1] / "README.md"


def run(ws: Workspace, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(ws.root), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def as_json(ws: Workspace, *args: str) -> object:
    code, out, err = run(ws, *args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def cli_ws(ws: Workspace) -> Workspace:
    result = runner.invoke(app, ["init", str(ws.root)])
    assert result.exit_code == 0
    ws.write("notes/a.md", "# A #paper\n")
    ws.write("notes/old/b.md", "old\n")
    ws.write("other/c.txt", "c\n")
    return ws


def test_init_twice_is_harmless(ws: Workspace) -> None:
    first = runner.invoke(app, ["init", str(ws.root)])
    assert "created freshline.toml" in first.stdout
    text = (ws.root / "freshline.toml").read_text()
    second = runner.invoke(app, ["init", str(ws.root), "--json"])
    assert second.exit_code == 0 and json.loads(second.stdout)["actions"] == []
    assert (ws.root / "freshline.toml").read_text() == text


def test_project_add_list_show_files_rm(cli_ws: Workspace) -> None:
    toml = cli_ws.root / "freshline.toml"
    toml.write_text("# my comment stays\n" + toml.read_text())
    added = as_json(cli_ws, "project", "add", "p", "--include", "notes", "--exclude", "notes/old")
    assert added == {
        "name": "p", "include": ["notes"], "exclude": ["notes/old"], "mode": "live",
        "allow_secrets": [], "signature": added["signature"],  # type: ignore[index]
        "files": 1,
    }
    assert "# my comment stays" in toml.read_text()
    assert [p["name"] for p in as_json(cli_ws, "project", "list")] == ["p"]  # type: ignore[union-attr]
    assert as_json(cli_ws, "project", "show", "p")["exclude"] == ["notes/old"]  # type: ignore[index]
    assert as_json(cli_ws, "project", "files", "p") == ["notes/a.md"]
    assert as_json(cli_ws, "project", "rm", "p") == {"removed": "p"}
    assert as_json(cli_ws, "project", "list") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["project", "add", "bad name", "--include", "x"], "invalid project name"),
        (["project", "add", "p", "--include", ""], "empty pattern"),
        (["project", "add", "p", "--include", "x", "--mode", "fast"], "unknown mode 'fast'"),
        (["project", "show", "nope"], "unknown project 'nope'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_write(
    cli_ws: Workspace, args: list[str], message: str
) -> None:
    before = (cli_ws.root / "freshline.toml").read_bytes()
    code, _out, err = run(cli_ws, *args)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert (cli_ws.root / "freshline.toml").read_bytes() == before


def test_invalid_toml_names_the_file(cli_ws: Workspace) -> None:
    (cli_ws.root / "freshline.toml").write_text("[projects.p\ninclude = 1\n")
    code, _out, err = run(cli_ws, "project", "list")
    assert code == 2 and "freshline.toml" in err


def test_scan_status_changes(cli_ws: Workspace) -> None:
    run(cli_ws, "project", "add", "p", "--include", "#paper")
    as_json(cli_ws, "scan")
    cli_ws.write("notes/new.md", "also #paper\n")
    scanned = as_json(cli_ws, "scan")
    assert scanned["projects"]["p"]["changes"] == [  # type: ignore[index]
        {"kind": "created", "path": "notes/new.md", "old_path": None, "detail": None}
    ]
    status = as_json(cli_ws, "status")
    expected = {"epoch": 1, "compacted_through": 0, "files": 2, "documents": {}}
    assert status["projects"]["p"] == expected  # type: ignore[index]
    changes = as_json(cli_ws, "changes", "p", "--since", "0")
    assert [c["path"] for c in changes["changes"]] == ["notes/new.md"]  # type: ignore[index]


@pytest.mark.parametrize("since", ["5", "-1"])
def test_changes_since_outside_the_epochs_is_bad_input(cli_ws: Workspace, since: str) -> None:
    run(cli_ws, "project", "add", "p", "--include", "notes")
    as_json(cli_ws, "scan")
    cli_ws.write("notes/new.md", "x\n")
    as_json(cli_ws, "scan")  # epoch 1
    code, out, err = run(cli_ws, "changes", "p", "--since", since)
    assert code == 2 and out == ""
    assert err.strip() == f"error: --since {since}: project p has epochs 0 to 1"


@pytest.mark.parametrize(("args", "message"), [
    (["changes", "p", "--page", "9"], "page 9 does not exist"),
    (["changes", "p", "--page", "0"], "'--page'"),
    (["changes", "p", "--since", str(10**30), "--page", "1"], f"--since {10**30}: project p"),
    (["changes", "p", "--channel", "telepathy", "--page", "1"], "--channel telepathy"),
    (["changes", "nope", "--page", "1"], "unknown project 'nope'"),
    (["changes", "p", "--folder", "/elsewhere"], "outside the workspace"),
    (["changes", "p", "--folder", "../x", "--page", "1"], "outside the workspace"),
    (["project", "files", "p", "--page", "9"], "page 9 does not exist"),
    (["project", "files", "p", "--page", "1", "--folder", "/elsewhere"], "outside the workspace"),
    (["project", "files", "p", "--page", "1", "--folder", "../x"], "outside the workspace"),
])
def test_a_bad_page_is_one_line_and_exit_2(
    cli_ws: Workspace, args: list[str], message: str
) -> None:
    run(cli_ws, "project", "add", "p", "--include", "notes")
    for flags in ([], ["--json"]):
        code, out, err = run(cli_ws, *args, *flags)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
        assert out == "" if not flags else json.loads(out)["exit"] == 2


def test_pages_of_changes_and_files_in_text_and_json(cli_ws: Workspace) -> None:
    run(cli_ws, "project", "add", "p", "--include", "notes")
    as_json(cli_ws, "scan")
    for i in range(300):
        cli_ws.write(f"notes/batch {i // 100}/new note {i:03}.md", "# new\n")
    first = as_json(cli_ws, "changes", "p", "--page", "1", "--channel", "hook")
    assert isinstance(first, dict) and first["pages"] > 1 and "new note 000.md" in first["text"]
    # Text pages hold more than JSON ones (no escaping to count): their own cut.
    def page(n: int) -> str:
        return run(cli_ws, "changes", "p", "--page", str(n), "--channel", "hook")[1]

    pages = int(page(1).split(" of ")[1].split(":")[0])
    texts = [page(n) for n in range(1, pages + 1)]
    for n, text in enumerate(texts, 1):
        assert len(text) <= 9_000 and f"page {n} of {pages}:" in text
    assert all(f"new note {i:03}.md" in "".join(texts) for i in range(300))
    folder = run(cli_ws, "project", "files", "p", "--page", "1", "--folder", "notes/batch 1")[1]
    assert "new note 100.md" in folder and "batch 0/" not in folder
    assert "This is the last page." in folder
    # one folder's changes: --folder pages them from page 1
    one = run(cli_ws, "changes", "p", "--folder", str(cli_ws.root / "notes/batch 2"))[1]
    assert f"Changes to p under {cli_ws.root}/notes/batch 2/ after epoch 0" in one
    assert "new note 299.md" in one and "batch 1/" not in one and "last page" in one


def test_changes_says_what_compaction_counted(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["notes"]}}, change_log_cap=2)
    as_json(ws, "scan")
    for i in range(4):
        ws.write(f"notes/n{i}.md", str(i))
        as_json(ws, "scan")
    code, out, _err = run(ws, "changes", "p", "--since", "0")
    assert code == 0
    assert out.splitlines()[:3] == ["counted   notes/: 2 created (epochs 1–2)",
                                    "created   notes/n2.md", "created   notes/n3.md"]
    data = as_json(ws, "changes", "p", "--since", "0")
    assert isinstance(data, dict) and data["compacted"] and not data["forgotten"]
    assert data["counted"] == [{"first_epoch": 1, "last_epoch": 2, "folder": "notes",
                                "counts": {"created": 2}, "entry": None}]


def test_session_send_updates(cli_ws: Workspace) -> None:
    run(cli_ws, "project", "add", "p", "--include", "notes")
    session = as_json(cli_ws, "session", "new", "--project", "p")["id"]  # type: ignore[index]
    first = as_json(cli_ws, "send", session, "hello")
    assert first["accepted"] and "<project_context" in first["wire_prompt"]  # type: ignore[index]
    cli_ws.write("notes/fresh.md", "fresh")
    preview = as_json(cli_ws, "updates", session)
    assert str(cli_ws.root / "notes/fresh.md") in preview["blocks"]  # type: ignore[index]
    second = as_json(cli_ws, "send", session, "again")
    assert str(cli_ws.root / "notes/fresh.md") in second["wire_prompt"]  # type: ignore[index]
    assert (second["cursor_before"], second["cursor_after"]) == (0, 1)  # type: ignore[index]
    assert as_json(cli_ws, "updates", session)["blocks"] is None  # type: ignore[index]
    assert as_json(cli_ws, "session", "close", session)["state"] == "closed"  # type: ignore[index]
    code, _out, err = run(cli_ws, "send", session, "after close")
    assert code == 2 and "closed" in err
    assert as_json(cli_ws, "session", "resume", session)["state"] == "active"  # type: ignore[index]
    resumed = as_json(cli_ws, "updates", session)["blocks"]
    assert resumed.startswith("<project_context")  # type: ignore[union-attr]
    log = as_json(cli_ws, "log", session)
    users = [e["content"] for e in log if e["author"] == "user"]  # type: ignore[union-attr, index]
    assert users == ["hello", "again"]  # the wire blocks never reach the transcript


def test_seen_a_closed_session_names_itself_in_the_resume_hint(cli_ws: Workspace) -> None:
    """Seen: `session close` then `send` suggested `freshline session resume` without the id."""
    run(cli_ws, "project", "add", "p", "--include", "notes")
    session = run(cli_ws, "session", "new", "--project", "p")[1].strip()
    assert run(cli_ws, "session", "close", session)[0] == 0
    code, _out, err = run(cli_ws, "send", session, "hello")
    assert (code, err) == (2, f"error: session '{session}' is closed; run `freshline session "
                              f"resume {session}`\n")
    assert run(cli_ws, "session", "resume", session)[0] == 0
    assert run(cli_ws, "send", session, "hello")[0] == 0


def test_unknown_session_is_exit_2(cli_ws: Workspace) -> None:
    code, _out, err = run(cli_ws, "send", "nope", "hi")
    assert code == 2 and "unknown session 'nope'" in err


def command_names() -> list[str]:
    names = []
    for c in app.registered_commands:
        names.append(c.name or c.callback.__name__)  # type: ignore[union-attr]
    for group in app.registered_groups:
        sub = group.typer_instance
        names += [f"{group.name} {c.name}" for c in sub.registered_commands]
    return names


@pytest.mark.parametrize("name", command_names())
def test_every_command_has_help_an_example_and_a_readme_entry(name: str) -> None:
    result = runner.invoke(app, [*name.split(), "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.stdout
    assert re.search(rf"freshline {re.escape(name)}\b", README.read_text()), name


def test_materialize_converts_and_prunes_what_left_every_project(cli_ws: Workspace) -> None:
    run(cli_ws, "project", "add", "p", "--include", "notes")
    cli_ws.write("notes/page.html", "<html><body><h1>Title</h1><p>words</p></body></html>")
    first = as_json(cli_ws, "materialize")
    assert first["projects"]["p"]["converted"] == ["notes/page.html"]  # type: ignore[index]
    snapshot = Path(first["projects"]["p"]["snapshots"]["notes/page.html"])  # type: ignore[index]
    assert "Title" in snapshot.read_text()
    again = as_json(cli_ws, "materialize")
    assert again["projects"]["p"]["converted"] == []  # type: ignore[index]
    (cli_ws.root / "notes/page.html").unlink()
    gone = as_json(cli_ws, "materialize")
    assert str(snapshot) in gone["pruned"] and not snapshot.exists()  # type: ignore[operator]


def test_seen_materialize_counted_a_failure_as_converted(cli_ws: Workspace) -> None:
    """Seen: `docs: 3 converted, 2 snapshots, 1 failed` for two good documents and a broken
    one; the exit code with a failed document was not documented (it is 0)."""
    run(cli_ws, "project", "add", "docs", "--include", "notes")
    cli_ws.write("notes/one.html", "<html><body><p>one</p></body></html>")
    cli_ws.write("notes/two.html", "<html><body><p>two</p></body></html>")
    cli_ws.write("notes/broken.pdf", b"%PDF-1.7 not really a PDF")
    code, out, err = run(cli_ws, "materialize", "docs")
    assert code == 0, err
    assert out.splitlines()[0] == "docs: 2 converted, 2 snapshots, 1 failed"
    assert out.splitlines()[1].startswith("  failed notes/broken.pdf: ")
    data = as_json(cli_ws, "materialize", "docs", "--retry-failed")["projects"]["docs"]  # type: ignore[index]
    assert data["converted"] == [] and list(data["failures"]) == ["notes/broken.pdf"]


def test_an_unknown_session_mode_is_a_usage_error(cli_ws: Workspace) -> None:
    run(cli_ws, "project", "add", "p", "--include", "notes")
    code, _out, err = run(cli_ws, "session", "new", "--project", "p", "--mode", "bogus")
    assert code == 2 and "bogus" in err


def test_an_os_error_is_one_line_exit_1(ws: Workspace) -> None:
    (ws.root / "blocker").write_text("a file where a folder should be")
    result = runner.invoke(app, ["init", str(ws.root / "blocker" / "ws")])
    assert result.exit_code == 1
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1


def test_changes_names_the_ignore_file_whose_rules_changed(cli_ws: Workspace) -> None:
    """Seen: `changes` printed a blank `config` line."""
    run(cli_ws, "project", "add", "p", "--include", "notes")
    as_json(cli_ws, "scan")
    cli_ws.write(".gitignore", "notes/old/\n")
    as_json(cli_ws, "scan")
    code, out, err = run(cli_ws, "changes", "p")
    assert code == 0, err
    assert "config    ignore rules changed in .gitignore" in out.splitlines()


@pytest.mark.parametrize(
    ("detail", "text"),
    [
        ({}, "the project's scope changed"),
        ({"ignore_files": [".gitignore", "notes/.gitignore"]},
         "ignore rules changed in .gitignore, notes/.gitignore"),
        ({"include_added": ["#paper"], "include_removed": ["notes"], "newly_included": ["x"]},
         "now included #paper; no longer included notes"),
        ({"exclude_added": ["a\nb"]}, "now excluded a\\nb"),
        ({"mode": {"from": "live", "to": "isolated"}}, "mode live → isolated"),
        ({"mode": {"from": None, "to": "live"}, "ignore_removed": ["*.tmp"]},
         "no longer ignored *.tmp; mode unset → live"),
    ],
)
def test_a_config_change_in_words(detail: dict[str, object], text: str) -> None:
    assert config_text(detail) == text


@given(st.dictionaries(st.sampled_from(["include_added", "exclude_removed", "ignore_files",
                                        "allow_secrets_added", "other"]),
                       st.lists(st.text(max_size=8), max_size=3)))
def test_a_config_change_is_one_line_never_blank(detail: dict[str, object]) -> None:
    text = config_text(detail)
    assert text.strip() and "\n" not in text
