"""Delivery tokens in the store (`session/tokens.py`): handed over in one process,
acknowledged in another, each once; unacknowledged changes are told again with their
epochs. Real workspaces, on SQLite and on PostgreSQL; each SessionManager is its own store
connection, as another process would be (MCP servers across processes: tests/test_mcp.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.context import Channel
from freshline.errors import UsageError
from freshline.session import SessionManager, Staged, tokens
from freshline.session.turn import applied
from freshline.store import Acknowledgement, DeliveryState, SessionRecord, SessionState
from tests.conftest import StoreBackend, Workspace


@pytest.fixture
def notes(ws: Workspace, backend: StoreBackend) -> Iterator[Workspace]:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    yield ws


@pytest.fixture
def two(notes: Workspace) -> Iterator[tuple[SessionManager, SessionManager]]:
    """Two managers on one workspace: two processes' worth of connections."""
    first, second = SessionManager(notes.config()), SessionManager(notes.config())
    yield first, second
    first.close()
    second.close()


def epochs(blocks: str) -> tuple[str, str]:
    found = re.search(r'from_epoch="(\d+)" to_epoch="(\d+)"', blocks)
    assert found, blocks
    return found.group(1), found.group(2)


def test_a_token_from_one_process_is_acknowledged_in_another(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = a.new("p", channel=Channel.MCP)
    issued = tokens.deliver(a, s.id, Channel.MCP)
    assert issued is not None and f'delivery="{issued.token}"' in issued.blocks
    assert b.get(s.id).cursor is not None and b.get(s.id).needs_manifest
    after = tokens.acknowledge(b, s.id, issued.token)
    assert not after.needs_manifest and after.state is SessionState.ACTIVE
    assert tokens.deliver(a, s.id, Channel.MCP) is None  # taken: nothing more to tell
    again = tokens.acknowledge(a, s.id, issued.token)  # acknowledged twice: no change
    assert again == b.get(s.id)
    taken = tokens.last_acknowledged(a, s.id)
    assert taken is not None and taken.how is Acknowledgement.TOKEN


def test_an_unacknowledged_delivery_is_told_again_with_its_epochs(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = a.new("p", channel=Channel.MCP)
    first = tokens.deliver(a, s.id, Channel.MCP)
    assert first is not None
    tokens.acknowledge(a, s.id, first.token)
    notes.write("notes/b.md", "# B\n")
    lost = tokens.deliver(a, s.id, Channel.MCP)
    assert lost is not None and "notes/b.md" in lost.blocks
    again = tokens.deliver(b, s.id, Channel.MCP)  # the other server, never acknowledged
    assert again is not None and again.token != lost.token
    assert epochs(again.blocks) == epochs(lost.blocks) and "notes/b.md" in again.blocks
    with pytest.raises(UsageError, match="superseded"):
        tokens.acknowledge(b, s.id, lost.token)
    tokens.acknowledge(a, s.id, again.token)
    assert tokens.deliver(b, s.id, Channel.MCP) is None


def test_each_taken_delivery_counts_a_turn_and_nothing_new_counts_none(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = a.new("p", channel=Channel.MCP)
    first = tokens.deliver(a, s.id, Channel.MCP)
    assert first is not None and first.record.staged["turn"] == 1
    assert "told" not in first.record.staged  # the updates as data stay in-process
    assert Staged.from_json(first.record.staged) == replace(first.turn.staged, told=None)
    assert tokens.acknowledge(b, s.id, first.token).turns == 1
    notes.write("notes/b.md", "# B\n")
    in_flight = tokens.deliver(a, s.id, Channel.HOOK)
    assert in_flight is not None
    notes.write("notes/c.md", "# C\n")
    built = tokens.deliver(a, s.id, Channel.HOOK, basis=[in_flight.record])
    assert built is not None and built.record.staged["turn"] == 3
    tokens.acknowledge(a, s.id, in_flight.token)
    assert tokens.acknowledge(b, s.id, built.token).turns == 3
    assert tokens.deliver(a, s.id, Channel.MCP) is None
    assert a.get(s.id).turns == 3


def test_unknown_tokens_and_other_sessions_tokens_are_refused(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = a.new("p", channel=Channel.MCP)
    other = a.new("p", channel=Channel.MCP, external_id="another")
    issued = tokens.deliver(a, s.id, Channel.MCP)
    assert issued is not None
    with pytest.raises(UsageError, match="unknown delivery token 'nope'"):
        tokens.acknowledge(a, s.id, "nope")
    with pytest.raises(UsageError, match="unknown delivery token"):
        tokens.acknowledge(a, other.id, issued.token)
    assert a.get(s.id).needs_manifest  # nothing moved


def test_a_delivery_built_on_one_in_flight_says_only_what_is_new(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = a.new("p", channel=Channel.MCP)
    first = tokens.deliver(a, s.id, Channel.HOOK)
    assert first is not None and first.record.manifest
    assert tokens.deliver(a, s.id, Channel.HOOK, basis=[first.record]) is None
    notes.write("notes/b.md", "# B\n")
    second = tokens.deliver(b, s.id, Channel.HOOK, basis=[first.record])
    assert second is not None and second.record.basis == first.token
    assert "project_context_updates" in second.blocks and "<project_context " not in second.blocks
    with pytest.raises(UsageError, match="not taken yet"):
        tokens.acknowledge(a, s.id, second.token)
    tokens.acknowledge(a, s.id, first.token, Acknowledgement.TRANSCRIPT)
    tokens.acknowledge(b, s.id, second.token, Acknowledgement.TRANSCRIPT)
    assert a.get(s.id).cursor == second.covers
    assert [d.state for d in a.store.deliveries_of(s.id)] == [DeliveryState.ACKNOWLEDGED] * 2


def test_superseding_a_chain_tells_all_of_it_again(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = a.new("p", channel=Channel.MCP)
    first = tokens.deliver(a, s.id, Channel.HOOK)
    notes.write("notes/b.md", "# B\n")
    assert first is not None
    second = tokens.deliver(a, s.id, Channel.HOOK, basis=[first.record])
    assert second is not None
    tokens.supersede(a, s.id)
    assert tokens.outstanding(a, s.id) == []
    again = tokens.deliver(a, s.id, Channel.HOOK)
    assert again is not None
    assert "<project_context " in again.blocks and "notes/b.md" in again.blocks


def test_settled_deliveries_are_pruned(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = a.new("p", channel=Channel.MCP)
    for i in range(30):
        notes.write(f"notes/n{i}.md", "x")
        issued = tokens.deliver(a, s.id, Channel.MCP)
        assert issued is not None
        tokens.acknowledge(a, s.id, issued.token)
    assert len(a.store.deliveries_of(s.id)) <= 21


def test_a_session_without_a_conversation_writes_no_tree(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        s = m.new("p", channel=Channel.MCP)
        assert not s.records_conversation and not m.get(s.id).records_conversation
        assert m.conversations.ids() == []
        assert m.preview(s.id) is not None  # the manifest, with no conversation to ask
    finally:
        m.close()


# --- staged changes as data (pure) ----------------------------------------------------------

_PATHS = st.lists(st.text("ab/é.", min_size=1, max_size=6), max_size=4)
_STAGED = st.builds(
    Staged,
    since=st.integers(0, 50),
    cursor=st.integers(0, 50),
    pending=_PATHS.map(set),
    failures=st.dictionaries(st.text("ab", min_size=1, max_size=3), st.text("0123", max_size=4)),
    manifest=st.none() | st.tuples(st.text(max_size=5), st.integers(0, 9), st.text(max_size=5)),
    turn=st.integers(0, 9),
)


RECORD = SessionRecord(
    id="s1", project="p", state=SessionState.LANDING, mode="live", created_at=0.0,
    resumed_at=None, cursor=None, manifest_epoch=0, dirty_key="k#0", held_key=None,
    manifest="{}", needs_manifest=True, resumed=False,
)


@given(_STAGED)
def test_staged_round_trips_through_json(staged: Staged) -> None:
    assert Staged.from_json(staged.to_json()) == staged


@given(_STAGED, st.none() | st.integers(0, 50), st.sampled_from(list(SessionState)))
def test_applied_never_moves_a_cursor_back_and_keeps_closed_closed(
    staged: Staged, cursor: int | None, state: SessionState
) -> None:
    s = applied(replace(RECORD, cursor=cursor, state=state), staged)
    if cursor is not None and cursor != staged.since:
        assert s.cursor == max(cursor, staged.cursor)
    else:
        assert s.cursor == staged.cursor
    assert (s.state is SessionState.CLOSED) == (state is SessionState.CLOSED)
    assert not s.needs_manifest and s.pending_docs == sorted(staged.pending)
    assert s.turns == max(RECORD.turns, staged.turn)
