"""The ACP messages the proxy reads or rewrites (`interfaces/acp/messages.py`): pure."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.context import ManifestInput, UpdatesInput, render_manifest, render_updates
from freshline.interfaces.acp.messages import (
    ToolReads,
    acknowledges,
    context_block,
    is_output,
    prompt_text,
    stdio_server,
    stop_reason,
    strip_blocks,
    with_context,
    with_mcp_server,
    without_context,
)
from freshline.store.records import Change, ChangeKind

ROOT = "/home/u/vault"
names = st.text(min_size=1, max_size=30).map(lambda s: f"notes/{s}")


def manifest(files: list[str]) -> str:
    text = render_manifest(ManifestInput(project="p", root=ROOT, epoch=1, include=["notes"],
                                         files=files))
    assert text is not None
    return text


def updates(paths: list[str]) -> str:
    changes = [Change(ChangeKind.CREATED, p) for p in paths]
    text = render_updates(UpdatesInput.from_changes("p", ROOT, 1, 2, changes))
    assert text is not None
    return text


def test_the_block_goes_first_and_nothing_else_changes() -> None:
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi", "x": 1}],
              "_meta": {"k": "v"}, "future": [1]}
    before = copy.deepcopy(params)
    sent = with_context(params, "BLOCK")
    assert params == before
    assert sent == {**params, "prompt": [context_block("BLOCK"), *params["prompt"]]}
    assert context_block("BLOCK") == {
        "type": "text", "text": "BLOCK", "annotations": {"audience": ["assistant"]}
    }


@pytest.mark.parametrize(
    ("stop", "taken"),
    [("end_turn", True), ("max_tokens", True), ("max_turn_requests", True),
     ("a_reason_from_a_newer_protocol", True), ("refusal", False), ("cancelled", False),
     (None, False)],
)
def test_which_answers_acknowledge(stop: str | None, taken: bool) -> None:
    assert acknowledges(stop) is taken


@pytest.mark.parametrize(
    ("result", "stop"),
    [({"stopReason": "end_turn"}, "end_turn"), ({"stopReason": 3}, None), ({}, None),
     (None, None), ([], None)],
)
def test_stop_reason(result: Any, stop: str | None) -> None:
    assert stop_reason(result) == stop


@pytest.mark.parametrize(
    ("kind", "output"),
    [("agent_message_chunk", True), ("agent_thought_chunk", True), ("tool_call", True),
     ("tool_call_update", True), ("plan", True), ("plan_update", True),
     ("available_commands_update", False), ("current_mode_update", False),
     ("config_option_update", False), ("session_info_update", False), ("usage_update", False),
     ("user_message_chunk", False), ("something_new", False)],
)
def test_which_updates_show_the_agent_answering(kind: str, output: bool) -> None:
    assert is_output({"sessionUpdate": kind}) is output


def chunk(text: str, kind: str = "user_message_chunk") -> dict[str, Any]:
    return {"sessionId": "s", "update": {"sessionUpdate": kind,
                                         "content": {"type": "text", "text": text}}}


def test_a_replayed_block_is_left_out_of_the_users_transcript() -> None:
    block = manifest(["notes/a.md"])
    assert without_context(chunk(block)) is None
    assert without_context(chunk(block + "\n\n" + updates(["notes/b.md"]))) is None
    merged = without_context(chunk(block + "\n\nmy own words"))
    assert merged == chunk("my own words")
    for kept in (chunk("plain"), chunk(block, kind="agent_message_chunk"),
                 {"sessionId": "s", "update": {"sessionUpdate": "user_message_chunk",
                                               "content": {"type": "image", "data": "x"}}}):
        assert without_context(kept) == kept


@given(st.lists(names, max_size=5), st.lists(names, max_size=5), st.text())
def test_only_freshlines_blocks_are_stripped(files: list[str], paths: list[str],
                                             words: str) -> None:
    blocks = manifest(files) + ("\n\n" + updates(paths) if paths else "")
    assert strip_blocks(blocks + "\n\n" + words) == words.lstrip()
    if not words.lstrip().startswith("<project_context"):
        assert strip_blocks(words) == words


def test_a_completed_read_call_reads_its_locations() -> None:
    calls = ToolReads()
    start = {"sessionUpdate": "tool_call", "toolCallId": "1", "kind": "read",
             "status": "pending", "locations": [{"path": "/w/a.md", "line": 3}]}
    assert calls.see(start) == []
    assert calls.see({"sessionUpdate": "tool_call_update", "toolCallId": "1",
                      "status": "in_progress"}) == []
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "1", "status": "completed"}
    assert calls.see(done) == ["/w/a.md"]
    assert calls.see(done) == []  # once


@pytest.mark.parametrize(
    "updates_seen",
    [
        [{"sessionUpdate": "tool_call", "toolCallId": "1", "kind": "edit",
          "locations": [{"path": "/w/a.md"}], "status": "completed"}],
        [{"sessionUpdate": "tool_call", "toolCallId": "1", "kind": "read",
          "locations": [{"path": "/w/a.md"}]},
         {"sessionUpdate": "tool_call_update", "toolCallId": "1", "status": "failed"}],
        [{"sessionUpdate": "tool_call", "toolCallId": 1, "kind": "read", "status": "completed",
          "locations": [{"path": "/w/a.md"}]}],
        [{"sessionUpdate": "tool_call", "toolCallId": "1", "kind": "read", "status": "completed",
          "locations": [{"line": 2}, "junk"]}],
        [{"sessionUpdate": "agent_message_chunk", "toolCallId": "1", "kind": "read",
          "status": "completed", "locations": [{"path": "/w/a.md"}]}],
    ],
)
def test_other_calls_read_nothing(updates_seen: list[dict[str, Any]]) -> None:
    calls = ToolReads()
    assert [p for u in updates_seen for p in calls.see(u)] == []


def test_a_read_call_completed_in_its_first_update() -> None:
    start = {"sessionUpdate": "tool_call", "toolCallId": "1", "kind": "read",
             "status": "completed", "locations": [{"path": "/w/a.md"}, {"path": "/w/b.md"}]}
    assert ToolReads().see(start) == ["/w/a.md", "/w/b.md"]


OURS = stdio_server("freshline", ["/opt/bin/freshline", "--workspace", "/w", "mcp"],
                    {"FRESHLINE_OWNER": "acp"})


def test_freshlines_server_is_an_acp_stdio_server() -> None:
    assert OURS == {"name": "freshline", "command": "/opt/bin/freshline",
                    "args": ["--workspace", "/w", "mcp"],
                    "env": [{"name": "FRESHLINE_OWNER", "value": "acp"}]}


@pytest.mark.parametrize(
    ("params", "servers"),
    [
        ({"cwd": "/w", "mcpServers": []}, [OURS]),
        ({"cwd": "/w"}, [OURS]),  # optional in session/resume and session/fork
        ({"cwd": "/w", "mcpServers": None}, [OURS]),
        ({"cwd": "/w", "mcpServers": [{"name": "git", "url": "http://x"}]},
         [{"name": "git", "url": "http://x"}, OURS]),
        ({"cwd": "/w", "mcpServers": [{"name": "freshline", "command": "/x", "args": []}]},
         [{"name": "freshline", "command": "/x", "args": []}]),  # the client's own kept
    ],
)
def test_freshlines_server_is_added_once_after_the_clients(
    params: dict[str, Any], servers: list[Any]
) -> None:
    before = copy.deepcopy(params)
    assert with_mcp_server(params, OURS)["mcpServers"] == servers
    assert params == before  # the request as received is not changed in place


@given(st.lists(st.fixed_dictionaries({"name": st.text(max_size=12)}), max_size=6))
def test_the_clients_servers_stay_first_and_freshline_appears_once(
    servers: list[dict[str, str]]
) -> None:
    out = with_mcp_server({"cwd": "/w", "mcpServers": servers, "x": 1}, OURS)
    assert out["mcpServers"][:len(servers)] == servers and out["x"] == 1
    assert sum(s["name"] == "freshline" for s in out["mcpServers"]) == max(
        1, sum(s["name"] == "freshline" for s in servers))


def test_params_that_are_not_an_object_pass_as_they_came() -> None:
    assert with_mcp_server(None, OURS) is None
    assert with_mcp_server([1], OURS) == [1]


@pytest.mark.parametrize(("params", "text"), [
    ({"prompt": [{"type": "text", "text": "fix the parser"}]}, "fix the parser"),
    ({"prompt": [{"type": "text", "text": "a"}, {"type": "resource_link", "uri": "file:///x"},
                 {"type": "text", "text": "b"}]}, "a\nb"),
    ({"prompt": [{"type": "image", "data": "…"}]}, ""),
    ({"prompt": "not a list"}, ""),
    ({"prompt": [{"type": "text", "text": 3}, "junk"]}, ""),
    (["not", "an", "object"], ""),
])
def test_a_prompts_text_is_what_its_checkpoint_records(params: Any, text: str) -> None:
    assert prompt_text(params) == text
