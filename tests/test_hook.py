"""`freshline hook claude-code`: recorded Claude Code payloads on stdin, a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.config import Config, ProjectConfig
from freshline.errors import NotFoundError, UsageError, WorkspaceError
from freshline.interfaces.hook.claude_code import ADAPTER, parse
from freshline.interfaces.hook.process import hook_log_path
from freshline.session import SessionManager
from freshline.session.evidence import Moment
from freshline.session.pinning import pinned_project, project_for, workspace_for
from tests.conftest import settled

PAYLOADS = Path(__file__).parent / "hook_payloads"
MANIFEST = "<project_context "
UPDATES = "<project_context_updates"


def payload(name: str, cwd: Path, **fields: Any) -> str:
    """A recorded payload with its `cwd` pointed at a test directory."""
    data = json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8"))
    data.update(cwd=str(cwd), **fields)
    return json.dumps(data)


def hook(stdin: str) -> str:
    """Run the hook as Claude Code does; it must exit 0. Returns its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "freshline", "hook", "claude-code"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    settled()
    return done.stdout


def context(stdout: str, event: str) -> str:
    """The additionalContext of the hook's JSON output."""
    out = json.loads(stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text: str = out["hookSpecificOutput"]["additionalContext"]
    return text


@pytest.fixture
def log(hook_log: Path) -> Path:
    return hook_log


@pytest.fixture
def notes(ws: Any) -> Any:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/sub/b.md", "# B\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def test_first_prompt_gets_the_manifest_then_only_changes(notes: Any, log: Path) -> None:
    prompt = payload("user_prompt_submit", notes.root / "notes")
    first = context(hook(prompt), "UserPromptSubmit")
    assert MANIFEST in first and "notes/sub/b.md" in first and "other/x.md" not in first
    assert hook(prompt) == ""  # nothing changed: no output

    notes.write("notes/c.md", "# C\n")
    second = context(hook(prompt), "UserPromptSubmit")
    assert UPDATES in second and MANIFEST not in second and "notes/c.md" in second
    assert "notes/a.md" not in second
    assert hook(prompt) == ""
    assert not log.exists()


def test_a_changed_document_is_converted_after_the_prompt(notes: Any, log: Path) -> None:
    prompt = payload("user_prompt_submit", notes.root / "notes")
    assert MANIFEST in context(hook(prompt), "UserPromptSubmit")
    report = docx.Document()
    report.add_paragraph("Quarterly figures are up.")
    report.save(str(notes.root / "notes" / "report.docx"))
    told = context(hook(prompt), "UserPromptSubmit")
    assert "notes/report.docx" in told
    # The hook converts in a detached process; a later prompt points at the snapshot.
    later = ""
    for _ in range(100):
        later = hook(prompt)
        if later:
            break
        time.sleep(0.2)
    ready = context(later, "UserPromptSubmit")
    assert "notes/report.docx" in ready and ".freshline/snapshots/" in ready
    assert not log.exists()


def test_session_start_gets_the_manifest_and_compact_gets_it_again(
    notes: Any, log: Path
) -> None:
    cwd = notes.root / "notes" / "sub"
    start = context(hook(payload("session_start", cwd)), "SessionStart")
    assert MANIFEST in start
    assert hook(payload("user_prompt_submit", cwd)) == ""
    again = context(hook(payload("session_start_compact", cwd)), "SessionStart")
    assert MANIFEST in again and "notes/a.md" in again
    assert hook(payload("user_prompt_submit", cwd)) == ""


def test_a_closed_session_reopens_as_it_was(notes: Any, log: Path) -> None:
    prompt = payload("user_prompt_submit", notes.root / "notes")
    assert MANIFEST in context(hook(prompt), "UserPromptSubmit")
    manager = SessionManager(notes.config())
    try:
        agent_session = json.loads(prompt)["session_id"]
        mapped = manager.by_external(ADAPTER.external_id(agent_session))
        assert mapped is not None
        manager.close_session(mapped.id)
    finally:
        manager.close()
    # The agent resumes its own conversation, which still holds the manifest.
    assert hook(prompt) == ""
    notes.write("notes/c.md", "# C\n")
    told = context(hook(prompt), "UserPromptSubmit")
    assert UPDATES in told and MANIFEST not in told and "notes/c.md" in told


def test_each_agent_session_has_its_own_freshline_session(notes: Any, log: Path) -> None:
    cwd = notes.root / "notes"
    assert MANIFEST in context(hook(payload("user_prompt_submit", cwd)), "UserPromptSubmit")
    other = payload("user_prompt_submit", cwd, session_id="another-claude-session")
    assert MANIFEST in context(hook(other), "UserPromptSubmit")
    assert hook(other) == ""


def _assert_logged_once(log: Path, *words: str) -> None:
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1, lines
    assert "freshline hook claude-code:" in lines[0]
    for word in words:
        assert word in lines[0]


def test_malformed_json_is_logged_not_printed(log: Path) -> None:
    assert hook((PAYLOADS / "malformed.json").read_text(encoding="utf-8")) == ""
    _assert_logged_once(log, "not JSON")


def test_cwd_outside_every_workspace(tmp_path: Path, log: Path) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    assert hook(payload("user_prompt_submit", stray)) == ""
    _assert_logged_once(log, "freshline.toml")


def test_cwd_outside_every_project(notes: Any, log: Path) -> None:
    assert hook(payload("user_prompt_submit", notes.root / "other")) == ""
    _assert_logged_once(log, "outside every project")


def test_broken_store(notes: Any, log: Path) -> None:
    (notes.root / ".freshline" / "freshline.db").write_bytes(b"this is not a database" * 100)
    assert hook(payload("user_prompt_submit", notes.root)) == ""
    _assert_logged_once(log, "StoreError")


def test_other_events_are_logged_and_ignored(notes: Any, log: Path) -> None:
    assert hook(payload("pre_tool_use", notes.root, hook_event_name="Notification")) == ""
    _assert_logged_once(log, "unsupported hook event 'Notification'")


def test_log_defaults_to_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FRESHLINE_HOOK_LOG", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert hook_log_path() == Path.home() / ".cache" / "freshline" / "hook.log"
    assert hook("not json") == ""
    _assert_logged_once(hook_log_path(), "not JSON")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hook_log_path() == tmp_path / "xdg" / "freshline" / "hook.log"


# --- parsing and project choice (pure) ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "not JSON"),
        ("[]", "not a JSON object"),
        ('{"hook_event_name": "SubagentStop", "session_id": "s", "cwd": "/x"}',
         "unsupported"),
        ('{"hook_event_name": "SessionStart", "cwd": "/x"}', "no session_id"),
        ('{"hook_event_name": "SessionStart", "session_id": "s"}', "no absolute cwd"),
        ('{"hook_event_name": "SessionStart", "session_id": "s", "cwd": "rel"}', "absolute"),
    ],
)
def test_parse_payload_rejects(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse(text)


def test_parse_payload_reads_recorded_payloads(tmp_path: Path) -> None:
    start = parse(payload("session_start_compact", tmp_path))
    assert (start.moment, start.lost_context, start.cwd) == (Moment.START, True, tmp_path)
    assert start.event == "SessionStart"
    prompt = parse(payload("user_prompt_submit", tmp_path))
    assert prompt.moment is Moment.PROMPT and not prompt.lost_context
    assert ADAPTER.external_id(prompt.agent_session) == f"claude-code:{prompt.agent_session}"


def _config(**projects: list[str]) -> Config:
    return Config(
        root=Path("/ws"),
        projects={name: ProjectConfig(name, tuple(inc)) for name, inc in projects.items()},
    )


CONFIG = _config(
    docs=["docs"],
    api=["docs/api", "*.pdf"],
    papers=["research/**/*.md"],
    tagged=["#paper"],
)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("docs", "docs"),
        ("docs/guide", "docs"),
        ("docs/api", "api"),  # the deepest folder wins
        ("docs/api/v2", "api"),
        ("docs/apis", "docs"),  # not inside docs/api
        ("research", "papers"),  # a glob's fixed folder counts as a folder
        ("research/2024", "papers"),
        ("", "docs"),  # the root: the first project, in config order
        ("elsewhere", "api"),  # `*.pdf` may match anywhere; api comes before tagged
    ],
)
def test_project_for_table(rel: str, expected: str) -> None:
    assert project_for(CONFIG, rel) == expected


def test_project_for_outside_every_project() -> None:
    config = _config(a=["notes"], b=["docs/**"])
    assert project_for(config, "") == "a"
    assert project_for(config, "docs/x") == "b"
    with pytest.raises(NotFoundError, match="outside every project"):
        project_for(config, "other")


_SEGMENT = st.sampled_from(["a", "b", "c", "ab"])
_FOLDER = st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join)


@given(folders=st.lists(_FOLDER, min_size=1, max_size=4), rel=st.lists(_SEGMENT, max_size=4))
def test_project_for_picks_a_project_holding_the_cwd(folders: list[str], rel: list[str]) -> None:
    config = _config(**{f"p{i}": [folder] for i, folder in enumerate(folders)})
    cwd = "/".join(rel)
    holding = [f for f in folders if cwd == f or cwd.startswith(f + "/")]
    below = [f for f in folders if not cwd or f == cwd or f.startswith(cwd + "/")]
    if not holding and not below:
        with pytest.raises(NotFoundError):
            project_for(config, cwd)
        return
    chosen = config.projects[project_for(config, cwd)].include[0]
    if holding:
        deepest = max(f.count("/") for f in holding)
        assert chosen == next(f for f in holding if f.count("/") == deepest)
    else:
        assert chosen == below[0]


# --- where a Claude session belongs -------------------------------------------------------


def test_workspace_and_project_come_from_the_most_stable_folder(
    two_projects: Any, tmp_path: Path
) -> None:
    root = two_projects.root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = two_projects.config()
    # Claude's project folder first; a start outside every workspace is passed over.
    assert workspace_for([elsewhere, root / "other"]) == root
    assert pinned_project(config, [root / "notes", root / "other"]) == "p"
    assert pinned_project(config, [elsewhere, root / "other"]) == "q"
    assert pinned_project(config, [elsewhere], "q") == "q"
    assert workspace_for([elsewhere], root) == root
    with pytest.raises(WorkspaceError, match="no freshline.toml"):
        workspace_for([elsewhere])
    with pytest.raises(WorkspaceError, match="no freshline.toml"):
        workspace_for([root], elsewhere)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        pinned_project(config, [elsewhere])
    with pytest.raises(NotFoundError, match="unknown project 'nope'"):
        pinned_project(config, [root], "nope")


def test_the_service_starts_after_the_first_call_indexed_the_workspace(
    notes: Any, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service starting beside the first call would walk and hash the workspace at the
    same time as the call's own full scan: it is started once the call is done."""
    import io

    from freshline.interfaces import autostart
    from freshline.interfaces.hook.process import run
    from freshline.interfaces.hook.protocol import HookOptions
    from freshline.store import Store

    monkeypatch.setenv("FRESHLINE_AUTOWATCH", "1")
    seen: list[tuple[int, bool]] = []

    def spawn(roots: list[str]) -> None:
        [root] = roots
        store = Store(Path(root) / ".freshline")
        seen.append((store.index_count(), store.session_by_external("claude-code:s") is None))

    monkeypatch.setattr(autostart, "spawn", spawn)
    prompt = payload("user_prompt_submit", notes.root / "notes", session_id="s")
    out = io.StringIO()
    run(ADAPTER, io.StringIO(prompt), out, HookOptions())
    assert MANIFEST in context(out.getvalue(), "UserPromptSubmit")
    assert seen == [(3, False)]
    assert not log.exists()
