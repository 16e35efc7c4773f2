"""Backends: echo, scripted, and the real openai and anthropic SDKs against a local server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.agent import (
    AssistantReply,
    Backend,
    BackendAuthError,
    BackendError,
    BackendMalformed,
    BackendRateLimited,
    BackendUnreachable,
    Message,
    Role,
    ToolCall,
    ToolResult,
    ToolSpec,
    backend_names,
    get_backend,
    register_backend,
)
from freshline.agent.backends.base import is_loopback
from freshline.agent.backends.echo import acknowledge
from freshline.agent.backends.retry import NO_RETRY
from freshline.agent.errors import BackendServerError
from freshline.errors import UsageError
from tests.fake_model_servers import FakeModelServer, FakeReply, closed_port

KEY = "test-key"
READ_SPEC = ToolSpec(
    "read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)


@pytest.fixture(autouse=True)
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]:
        monkeypatch.delenv(name, raising=False)


# --- echo --------------------------------------------------------------------------------------


def test_echo_acknowledges_blocks_and_message() -> None:
    message = (
        '<project_context project="r">manifest</project_context>\n'
        '<project_context_updates epoch="3">\ncreated: a.md\n</project_context_updates>\n'
        "What changed?"
    )
    reply = get_backend("echo").complete([Message.user(message)], [READ_SPEC])
    assert reply == AssistantReply(
        f"echo: received {len(message)} chars; blocks: project_context, "
        "project_context_updates; message: 'What changed?'"
    )


def test_echo_without_blocks_or_message() -> None:
    echo = get_backend()
    assert echo.complete([Message.user("hi")], []).text == (
        "echo: received 2 chars; blocks: none; message: 'hi'"
    )
    assert echo.complete([Message.system("be brief")], []).text == "echo: no message received"


def test_echo_streams_its_reply_and_answers_the_last_user_message() -> None:
    chunks: list[str] = []
    history = [Message.user("first"), AssistantReply("ok").as_message(), Message.user("second")]
    reply = get_backend("echo").complete(history, [], on_text=chunks.append)
    assert chunks == [reply.text] and "'second'" in reply.text


@given(st.text(max_size=300))
def test_echo_is_deterministic_and_one_line_quoted(message: str) -> None:
    first = acknowledge(message)
    assert first == acknowledge(message)
    assert first.startswith(f"echo: received {len(message)} chars; blocks: ")
    assert "\n" not in first.split("message: ", 1)[1]


# --- registry ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("gpt", {}, "unknown model backend 'gpt'"),
        ("openai", {}, "needs an argument: openai:MODEL"),
        ("scripted:", {}, "needs an argument: scripted:FILE"),
        ("echo:loud", {}, "takes no argument"),
        ("echo", {"base_url": "http://x"}, "takes no option base_url"),
        ("openai:m", {"colour": "red"}, "takes no option colour"),
    ],
)
def test_get_backend_rejects_bad_specs(spec: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        get_backend(spec, **options)


def test_get_backend_drops_unset_options_and_lists_names() -> None:
    assert get_backend("echo", base_url=None, api_key=None).name == "echo"
    assert backend_names()[:4] == ["echo", "scripted:FILE", "openai:MODEL", "anthropic:MODEL"]


def test_register_backend_adds_a_spec() -> None:
    class Fixed(Backend):
        def __init__(self, text: str) -> None:
            self.text = text

        def complete(self, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
            return AssistantReply(self.text)

    register_backend("fixed", Fixed, "TEXT")
    assert get_backend("fixed:hello").complete([], []).text == "hello"


# --- scripted ----------------------------------------------------------------------------------


def script(tmp_path: Path, turns: object) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return path


def test_scripted_groups_steps_into_replies(tmp_path: Path) -> None:
    path = script(tmp_path, [
        [{"say": "Looking."}, {"tool": "read", "args": {"path": "a.md"}},
         {"tool": "list"}, {"say": "Now editing."},
         {"tool": "edit", "args": {"path": "a.md", "old": "x", "new": "y"}}, {"say": "Done."}],
        [{"say": "Second turn."}],
    ])
    backend = get_backend(f"scripted:{path}")
    history = [Message.user("go")]
    first = backend.complete(history, [])
    assert first == AssistantReply("Looking.", (
        ToolCall("call_1_1", "read", {"path": "a.md"}), ToolCall("call_1_2", "list", {}),
    ))
    history += [first.as_message(), Message.tool(ToolResult("call_1_1", "read", "x"))]
    second = backend.complete(history, [])
    assert second.text == "Now editing." and second.tool_calls[0].id == "call_1_3"
    history += [second.as_message(), Message.tool(ToolResult("call_1_3", "edit", "ok"))]
    assert backend.complete(history, []) == AssistantReply("Done.")
    assert backend.complete([Message.user("again")], []) == AssistantReply("Second turn.")
    chunks: list[str] = []
    out = backend.complete([Message.user("more")], [], on_text=chunks.append)
    assert out.text == "scripted: no more turns in script.json (played 2)" == chunks[0]


def test_scripted_turn_ending_in_tool_calls_ends_with_empty_reply(tmp_path: Path) -> None:
    backend = get_backend(f"scripted:{script(tmp_path, [[{'tool': 'list'}]])}")
    first = backend.complete([Message.user("go")], [])
    tool = Message(Role.TOOL, "listing", tool_call_id=first.tool_calls[0].id)
    assert backend.complete([Message.user("go"), first.as_message(), tool], []) == AssistantReply()


@pytest.mark.parametrize(("earlier", "played", "says"), [
    (0, 0, "t1"), (1, 0, "t2"), (3, 0, "t4"), (0, 2, "t3"), (1, 2, "t3"), (2, 1, "t3"),
])
def test_scripted_plays_the_turn_after_the_conversation_or_its_last(
    tmp_path: Path, earlier: int, played: int, says: str
) -> None:
    """A new process (a `send`) goes on after the human messages the conversation holds;
    a backend that played further (a failed turn records nothing) goes on after its own."""
    turns = [[{"say": f"t{i}"}] for i in range(1, 6)]
    backend = get_backend(f"scripted:{script(tmp_path, turns)}")
    for i in range(played):
        backend.complete([Message.user(f"played {i}")], [])
    history = [m for i in range(earlier)
               for m in (Message.user(f"said {i}"), Message(Role.ASSISTANT, "answer"))]
    assert backend.complete([*history, Message.user("now")], []).text == says


@pytest.mark.parametrize(
    ("kind", "error"),
    [("auth", BackendAuthError), ("rate_limit", BackendRateLimited),
     ("network", BackendUnreachable), ("malformed", BackendMalformed)],
)
def test_scripted_fail_step_raises_then_next_turn_plays(
    tmp_path: Path, kind: str, error: type[BackendError]
) -> None:
    backend = get_backend(f"scripted:{script(tmp_path, [[{'fail': kind}], [{'say': 'ok'}]])}")
    with pytest.raises(error, match=kind):
        backend.complete([Message.user("one")], [])
    assert backend.complete([Message.user("two")], []).text == "ok"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{not json", "not valid JSON"),
        ('{"turns": {}}', "must hold"),
        ('{"turns": [{"say": "x"}]}', "must hold"),
        ('{"turns": [["say"]]}', "turn 1 step 1: a step must be an object"),
        ('{"turns": [[{"say": "a", "tool": "b"}]]}', "exactly one of"),
        ('{"turns": [[{"sing": "a"}]]}', "exactly one of"),
        ('{"turns": [[{"say": 3}]]}', "must be a string"),
        ('{"turns": [[{"tool": "read", "args": []}]]}', "args an object"),
        ('{"turns": [[{"say": "a", "args": {}}]]}', "only a tool step takes args"),
        ('{"turns": [[{"fail": "boom"}]]}', "fail must be one of"),
    ],
)
def test_scripted_rejects_bad_files(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=message):
        get_backend(f"scripted:{path}")


# --- openai and anthropic against the local server ---------------------------------------------


@dataclass(frozen=True)
class Provider:
    name: str
    key_var: str
    url_var: str

    def base_url(self, server: FakeModelServer) -> str:
        return server.openai_url if self.name == "openai" else server.url

    def backend(self, server: FakeModelServer, **options: object) -> Backend:
        options = {"base_url": self.base_url(server), "api_key": KEY, "timeout": 20, **options}
        return get_backend(f"{self.name}:test-model", **options)


PROVIDERS = [
    Provider("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    Provider("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
]


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(api_key=KEY) as running:
        yield running


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_text_answer(provider: Provider, server: FakeModelServer, stream: bool) -> None:
    server.queue(FakeReply(text="Hello from the model."))
    chunks: list[str] = []
    backend = provider.backend(server, stream=stream)
    history = [Message.system("be brief"), Message.user("hi")]
    reply = backend.complete(history, [READ_SPEC], on_text=chunks.append)
    backend.close()
    assert reply == AssistantReply("Hello from the model.")
    assert "".join(chunks) == reply.text
    assert len(chunks) == (7 if stream else 1)
    assert server.requests[0].body["model"] == "test-model"
    assert bool(server.requests[0].body.get("stream")) is stream


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_tool_call_answer(provider: Provider, server: FakeModelServer, stream: bool) -> None:
    server.queue(FakeReply(text="Let me read.", tool_calls=[
        ("call_a", "read", {"path": "notes/a.md"}), ("call_b", "read", {"path": "b.md"}),
    ]))
    reply = provider.backend(server, stream=stream).complete([Message.user("hi")], [READ_SPEC])
    assert reply == AssistantReply("Let me read.", (
        ToolCall("call_a", "read", {"path": "notes/a.md"}),
        ToolCall("call_b", "read", {"path": "b.md"}),
    ))


def test_openai_wire_shape(server: FakeModelServer) -> None:
    server.queue(FakeReply(text="done"))
    call = ToolCall("call_a", "read", {"path": "a.md"})
    history = [
        Message.system("sys"), Message.user("hi"), AssistantReply("", (call,)).as_message(),
        Message.tool(ToolResult("call_a", "read", "content of a")),
    ]
    PROVIDERS[0].backend(server).complete(history, [READ_SPEC])
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_a", "type": "function",
            "function": {"name": "read", "arguments": '{"path": "a.md"}'},
        }]},
        {"role": "tool", "tool_call_id": "call_a", "content": "content of a"},
    ]
    assert body["tools"] == [{"type": "function", "function": {
        "name": "read", "description": "Read a file.", "parameters": READ_SPEC.parameters,
    }}]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_anthropic_wire_shape(server: FakeModelServer) -> None:
    server.queue(FakeReply(text="done"))
    call = ToolCall("toolu_a", "read", {"path": "a.md"})
    history = [
        Message.system("sys"), Message.user("hi"), AssistantReply("reading", (call,)).as_message(),
        Message.tool(ToolResult("toolu_a", "read", "no such file", is_error=True)),
        Message.user("and now?"),
    ]
    PROVIDERS[1].backend(server, max_tokens=77).complete(history, [READ_SPEC])
    body = server.requests[0].body
    assert body["system"] == "sys" and body["max_tokens"] == 77
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.md"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "no such file",
             "is_error": True},
            {"type": "text", "text": "and now?"},
        ]},
    ]
    assert body["tools"] == [
        {"name": "read", "description": "Read a file.", "input_schema": READ_SPEC.parameters}
    ]


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        (FakeReply(status=429), BackendRateLimited, "rate limited (HTTP 429)"),
        (FakeReply(status=403), BackendAuthError, "authentication failed (HTTP 403)"),
        (FakeReply(status=500), BackendServerError, "server error (HTTP 500)"),
        (FakeReply(raw="{not json"), BackendMalformed, "malformed answer"),
        (FakeReply(raw="data: {broken\n\nevent: x\ndata: {\n\n"), BackendMalformed, "malformed"),
    ],
    ids=["429", "403", "500", "bad-json", "bad-sse"],
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_server_errors_become_backend_errors(
    provider: Provider, server: FakeModelServer, stream: bool,
    reply: FakeReply, error: type[BackendError], message: str,
) -> None:
    server.queue(reply)
    chunks: list[str] = []
    backend = provider.backend(server, stream=stream, retry=NO_RETRY)
    with pytest.raises(error, match=re.escape(message)) as caught:
        backend.complete([Message.user("hi")], [READ_SPEC], on_text=chunks.append)
    assert type(caught.value) is error
    assert str(caught.value).startswith(f"{provider.name}: ") and "\n" not in str(caught.value)
    assert chunks == []


def test_stream_that_breaks_off_is_malformed(provider: Provider, server: FakeModelServer) -> None:
    server.queue(FakeReply(text="partial answer", drop_last=2))
    with pytest.raises(BackendMalformed, match="stream ended before"):
        provider.backend(server).complete([Message.user("hi")], [])


def test_wrong_key_is_an_auth_error(provider: Provider, server: FakeModelServer) -> None:
    backend = provider.backend(server, api_key="wrong")
    with pytest.raises(BackendAuthError, match=r"authentication failed \(HTTP 401\) at http://"):
        backend.complete([Message.user("hi")], [])


def test_connection_refused_is_unreachable(provider: Provider) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    backend = get_backend(f"{provider.name}:m", base_url=url, api_key=KEY, timeout=5)
    with pytest.raises(BackendUnreachable, match=f"{provider.name}: cannot reach {url}"):
        backend.complete([Message.user("hi")], [])


def test_timeout_is_unreachable(provider: Provider, server: FakeModelServer) -> None:
    server.queue(FakeReply(text="too late", delay=1.0))
    backend = provider.backend(server, timeout=0.2)
    with pytest.raises(BackendUnreachable, match="before the timeout"):
        backend.complete([Message.user("hi")], [])


def test_invalid_tool_arguments_are_malformed(server: FakeModelServer) -> None:
    bad = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{oops"}},
        ]}}]}
    server.queue(FakeReply(raw=json.dumps(bad)), FakeReply(raw=json.dumps({"object": "x"})))
    backend = PROVIDERS[0].backend(server, stream=False)
    with pytest.raises(BackendMalformed, match="invalid JSON arguments"):
        backend.complete([Message.user("hi")], [])
    with pytest.raises(BackendMalformed, match="no choices"):
        backend.complete([Message.user("hi")], [])


def test_anthropic_answer_without_content_is_malformed(server: FakeModelServer) -> None:
    server.queue(FakeReply(raw=json.dumps({"type": "message", "id": "m"})))
    backend = PROVIDERS[1].backend(server, stream=False)
    with pytest.raises(BackendMalformed, match="no content"):
        backend.complete([Message.user("hi")], [])


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:11434/v1", True), ("http://localhost:8080", True),
        ("http://[::1]:8000/v1", True), ("http://0.0.0.0:1234", True),
        ("https://api.openai.com/v1", False), ("http://127.0.0.2.example.com", False),
        ("", False), (None, False),
    ],
)
def test_is_loopback(url: str | None, local: bool) -> None:
    assert is_loopback(url) is local


def test_missing_key_for_a_remote_server_is_refused(provider: Provider) -> None:
    with pytest.raises(BackendAuthError, match=f"no API key: set {provider.key_var}"):
        get_backend(f"{provider.name}:m")
    with pytest.raises(BackendAuthError, match="no API key"):
        get_backend(f"{provider.name}:m", base_url="https://models.example.com/v1")


def test_local_server_needs_no_key_and_env_settings_apply(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeModelServer() as server:
        server.queue(FakeReply(text="local"))
        monkeypatch.setenv(provider.url_var, provider.base_url(server))
        backend = get_backend(f"{provider.name}:m")
        assert backend.complete([Message.user("hi")], []).text == "local"
    assert server.requests[0].headers["authorization"] == "Bearer freshline-local"


def test_env_key_is_used(provider: Provider, server: FakeModelServer,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(provider.key_var, KEY)
    server.queue(FakeReply(text="keyed"))
    backend = get_backend(f"{provider.name}:m", base_url=provider.base_url(server))
    assert backend.complete([Message.user("hi")], []).text == "keyed"


# --- property: the anthropic history always alternates -----------------------------------------

MESSAGES = st.lists(
    st.one_of(
        st.builds(Message.user, st.text(max_size=3)),
        st.builds(Message.system, st.text(max_size=3)),
        st.builds(lambda t, n: AssistantReply(t, tuple(
            ToolCall(f"id{i}", "list") for i in range(n))).as_message(),
            st.text(max_size=3), st.integers(0, 2)),
        st.builds(lambda t: Message.tool(ToolResult("id0", "list", t)), st.text(max_size=3)),
    ),
    max_size=10,
)


@given(MESSAGES)
def test_anthropic_wire_messages_alternate_and_keep_every_block(history: list[Message]) -> None:
    # Imported here: the Anthropic SDK takes a second and more to import, and every test
    # worker imports every test module.
    from freshline.agent.backends.anthropic_backend import wire_messages

    system, wire = wire_messages(history)
    roles = [entry["role"] for entry in wire]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
    assert all(entry["content"] for entry in wire)
    blocks = sum(len(entry["content"]) for entry in wire)
    expected = sum(
        len(m.tool_calls) + bool(m.content) if m.role is Role.ASSISTANT else
        (1 if m.role is Role.TOOL else bool(m.content))
        for m in history if m.role is not Role.SYSTEM
    )
    assert blocks == expected
    assert system == "\n\n".join(m.content for m in history if m.role is Role.SYSTEM)
