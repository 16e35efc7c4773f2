"""The tool loop: scripted and SDK backends driving real tools on real files."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshline.agent import (
    Author,
    BackendRateLimited,
    BackendUnreachable,
    Message,
    Role,
    Toolbox,
    ToolMode,
    TurnEvent,
    get_backend,
    run_turn,
)
from freshline.errors import UsageError
from tests.fake_model_servers import FakeModelServer, FakeReply, closed_port


def scripted(tmp_path: Path, turns: list[list[dict[str, object]]]):  # type: ignore[no-untyped-def]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return get_backend(f"scripted:{path}")


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "worktree"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "deploy.sh").write_text("#!/bin/sh\necho staging\n")
    (root / "bin" / "deploy.sh").chmod(0o755)
    (root / "README.md").write_text("# Project\nteh intro\n")
    return root


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_scripted_turn_edits_in_isolated_mode_and_preserves_modes(
    tmp_path: Path, worktree: Path
) -> None:
    backend = scripted(tmp_path, [[
        {"say": "Reading the script."},
        {"tool": "read", "args": {"path": "bin/deploy.sh"}},
        {"say": "Pointing it at production and fixing the README."},
        {"tool": "edit", "args": {"path": "bin/deploy.sh", "old": "staging", "new": "prod"}},
        {"tool": "edit", "args": {"path": str(worktree / "README.md"), "old": "teh", "new": "the"}},
        {"tool": "write", "args": {"path": "docs/NOTES.md", "content": "deployed\n"}},
        {"say": "Done: three files changed."},
    ]])
    toolbox = Toolbox(worktree, ToolMode.ISOLATED)
    streamed: list[str] = []
    seen: list[TurnEvent] = []
    result = run_turn(backend, [Message.user("deploy to prod")], toolbox,
                      on_text=streamed.append, on_event=seen.append)

    assert (worktree / "bin" / "deploy.sh").read_text() == "#!/bin/sh\necho prod\n"
    assert mode(worktree / "bin" / "deploy.sh") == 0o755
    assert (worktree / "README.md").read_text() == "# Project\nthe intro\n"
    assert mode(worktree / "README.md") == 0o644
    assert (worktree / "docs" / "NOTES.md").read_text() == "deployed\n"

    assert result.text == "Done: three files changed." and not result.hit_limit
    assert seen == result.events
    assert [e.author for e in result.events] == [
        Author.ASSISTANT, Author.TOOL, Author.ASSISTANT, Author.TOOL, Author.TOOL, Author.TOOL,
        Author.ASSISTANT,
    ]
    read_event = result.events[1]
    assert read_event.content == "#!/bin/sh\necho staging\n"
    assert read_event.extra == {
        "tool": "read", "args": {"path": "bin/deploy.sh"}, "call_id": "call_1_1",
        "is_error": False,
    }
    assert result.events[2].extra["tool_calls"][0]["name"] == "edit"
    assert [e.extra.get("changed") for e in result.events[3:6]] == [
        ["bin/deploy.sh"], ["README.md"], ["docs/NOTES.md"],
    ]
    assert streamed == [
        "Reading the script.", "Pointing it at production and fixing the README.",
        "Done: three files changed.",
    ]
    assert [m.role for m in result.messages] == [
        Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.TOOL, Role.ASSISTANT,
    ]
    assert result.messages[1].tool_call_id == "call_1_1"


def test_chmod_lands_in_the_event_extra(tmp_path: Path, worktree: Path) -> None:
    backend = scripted(tmp_path, [[
        {"tool": "chmod", "args": {"path": "README.md", "executable": True}}, {"say": "ok"},
    ]])
    result = run_turn(backend, [Message.user("x")], Toolbox(worktree, "isolated"))
    assert result.events[1].extra["mode_changes"] == ["README.md"]
    assert mode(worktree / "README.md") == 0o755


def test_tool_errors_go_back_to_the_model_not_up(tmp_path: Path, worktree: Path) -> None:
    backend = scripted(tmp_path, [[
        {"tool": "read", "args": {"path": "../../etc/passwd"}},
        {"tool": "write", "args": {"path": "x.md", "content": "live"}},
        {"say": "I could not."},
    ]])
    result = run_turn(backend, [Message.user("x")], Toolbox(worktree, "live"))
    assert result.text == "I could not."
    assert [e.extra["is_error"] for e in result.events[1:3]] == [True, True]
    assert "escapes the workspace" in result.events[1].content
    assert not (worktree / "x.md").exists()
    assert result.messages[1].is_error


def test_loop_stops_at_the_iteration_limit(tmp_path: Path, worktree: Path) -> None:
    steps: list[dict[str, object]] = []
    for i in range(10):
        steps += [{"say": f"step {i}"}, {"tool": "list"}]
    backend = scripted(tmp_path, [steps])
    result = run_turn(backend, [Message.user("loop")], Toolbox(worktree, "live"), max_iterations=3)
    assert result.hit_limit
    assert result.text.startswith("[stopped after 3 model calls")
    authors = [e.author for e in result.events]
    assert authors == [Author.ASSISTANT, Author.TOOL] * 3 + [Author.SYSTEM]
    assert result.events[-1].extra == {"limit": 3}
    assert result.messages[-1].role is Role.TOOL  # every tool call has its result


def test_backend_error_mid_turn_propagates_and_returns_nothing(
    tmp_path: Path, worktree: Path
) -> None:
    backend = scripted(tmp_path, [[
        {"say": "Reading."}, {"tool": "read", "args": {"path": "README.md"}},
        {"fail": "rate_limit"},
    ]])
    seen: list[TurnEvent] = []
    with pytest.raises(BackendRateLimited):
        run_turn(backend, [Message.user("x")], Toolbox(worktree, "live"), on_event=seen.append)
    assert len(seen) == 2  # shown as it happened, but no TurnResult exists to record


def test_without_a_toolbox_calls_are_answered_with_errors(tmp_path: Path) -> None:
    backend = scripted(tmp_path, [[{"tool": "list"}, {"say": "fine"}]])
    result = run_turn(backend, [Message.user("x")], None)
    assert result.events[1].content == "list: no tools are available"
    assert result.text == "fine"


def test_echo_turn_is_one_assistant_event() -> None:
    result = run_turn(get_backend("echo"), [Message.user("hello")], None)
    assert result.text == "echo: received 5 chars; blocks: none; message: 'hello'"
    assert result.events == [TurnEvent(Author.ASSISTANT, result.text, {})]


def test_iterations_must_be_positive() -> None:
    with pytest.raises(UsageError):
        run_turn(get_backend("echo"), [Message.user("x")], None, max_iterations=0)


# --- through the real SDKs ---------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as running:
        yield running


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_sdk_backend_reads_a_file_through_the_loop(
    name: str, server: FakeModelServer, worktree: Path
) -> None:
    server.queue(
        FakeReply(text="Let me look.", tool_calls=[("id_1", "read", {"path": "README.md"})]),
        FakeReply(text="The intro has a typo."),
    )
    base_url = server.openai_url if name == "openai" else server.url
    backend = get_backend(f"{name}:m", base_url=base_url, timeout=20)
    streamed: list[str] = []
    history = [Message.system("You help."), Message.user("check the readme")]
    result = run_turn(backend, history, Toolbox(worktree, "live"), on_text=streamed.append)
    assert result.text == "The intro has a typo."
    assert "".join(streamed) == "Let me look.The intro has a typo."
    assert result.events[1].content == "# Project\nteh intro\n"
    second = json.dumps(server.requests[1].body)
    assert "teh intro" in second and "id_1" in second
    assert len(server.requests[0].body["tools"]) == 3


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_sdk_backend_failure_mid_turn_propagates(name: str, worktree: Path) -> None:
    backend = get_backend(f"{name}:m", base_url=f"http://127.0.0.1:{closed_port()}", timeout=5)
    with pytest.raises(BackendUnreachable):
        run_turn(backend, [Message.user("x")], Toolbox(worktree, "live"))


# --- property: how steps group into replies ----------------------------------------------------

STEPS = st.lists(
    st.one_of(
        st.builds(lambda t: {"say": t}, st.text(alphabet="abc ", min_size=1, max_size=5)),
        st.just({"tool": "list"}),
    ),
    max_size=12,
)


def expected_replies(steps: list[dict[str, str]]) -> list[str]:
    """A model of the grouping: says then tools make one reply; trailing tools add an empty one."""
    replies: list[list[str]] = [[]]
    after_tool = False
    for step in steps:
        if "say" in step:
            if after_tool:
                replies.append([])
                after_tool = False
            replies[-1].append(step["say"])
        else:
            after_tool = True
    if after_tool:
        replies.append([])
    return ["\n".join(group) for group in replies]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_scripted_steps_group_into_replies(tmp_path: Path, steps: list[dict[str, str]]) -> None:
    (tmp_path / "ws").mkdir(exist_ok=True)
    backend = scripted(tmp_path, [steps])
    result = run_turn(backend, [Message.user("go")], Toolbox(tmp_path / "ws", "live"),
                      max_iterations=20)
    texts = [e.content for e in result.events if e.author is Author.ASSISTANT]
    tools = [e for e in result.events if e.author is Author.TOOL]
    assert texts == expected_replies(steps)
    assert len(tools) == sum("tool" in step for step in steps)
    ids = [e.extra["call_id"] for e in tools]
    assert len(set(ids)) == len(ids)
