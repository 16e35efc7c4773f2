"""The delivery engine (`session/engine.py`): deliveries handed over in one process,
acknowledged in another, each once; unacknowledged changes are told again with their
epochs; a session is delivered to only by its own channel. Real workspaces, on SQLite and
on PostgreSQL; each SessionManager is its own store connection, as another process would
be (MCP servers across processes: tests/test_mcp.py; racing: tests/test_delivery_race.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.context import Channel
from freshline.errors import UsageError
from freshline.session import SessionManager, Staged
from freshline.session.checkpoints import checkpoint
from freshline.session.claims import Outcome, outcome
from freshline.session.engine import RULES, Deliveries
from freshline.session.owners import owner_of
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
    issued = Deliveries(a).issue(s.id, Channel.MCP)
    assert issued is not None and f'delivery="{issued.token}"' in issued.blocks
    assert b.get(s.id).cursor is not None and b.get(s.id).needs_manifest
    after = Deliveries(b).acknowledge(s.id, issued.token)
    assert not after.needs_manifest and after.state is SessionState.ACTIVE
    assert Deliveries(a).issue(s.id, Channel.MCP) is None  # taken: nothing more to tell
    again = Deliveries(a).acknowledge(s.id, issued.token)  # acknowledged twice: no change
    assert again == b.get(s.id)
    taken = Deliveries(a).last_acknowledged(s.id)
    assert taken is not None and taken.how is Acknowledgement.TOKEN


def test_an_unacknowledged_delivery_is_told_again_with_its_epochs(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = a.new("p", channel=Channel.MCP)
    first = Deliveries(a).issue(s.id, Channel.MCP)
    assert first is not None
    Deliveries(a).acknowledge(s.id, first.token)
    notes.write("notes/b.md", "# B\n")
    lost = Deliveries(a).issue(s.id, Channel.MCP)
    assert lost is not None and "notes/b.md" in lost.blocks
    again = Deliveries(b).issue(s.id, Channel.MCP)  # the other server, never acknowledged
    assert again is not None and again.token != lost.token
    assert epochs(again.blocks) == epochs(lost.blocks) and "notes/b.md" in again.blocks
    with pytest.raises(UsageError, match="superseded"):
        Deliveries(b).acknowledge(s.id, lost.token)
    Deliveries(a).acknowledge(s.id, again.token)
    assert Deliveries(b).issue(s.id, Channel.MCP) is None


def hook_session(m: SessionManager, name: str = "c1") -> str:
    """A hook's session, as the hook opens one."""
    return m.new("p", mode="live", external_id=f"claude-code:{name}", channel=Channel.HOOK).id


def test_each_taken_delivery_counts_a_turn_and_nothing_new_counts_none(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = a.new("p", channel=Channel.MCP).id
    first = Deliveries(a).issue(s, Channel.MCP)
    assert first is not None and first.record is not None and first.record.staged["turn"] == 1
    assert "told" not in first.record.staged  # the updates as data stay in-process
    assert Staged.from_json(first.record.staged) == replace(first.turn.staged, told=None)
    assert Deliveries(b).acknowledge(s, first.token).turns == 1
    notes.write("notes/b.md", "# B\n")
    second = Deliveries(a).issue(s, Channel.MCP)
    assert second is not None and second.record is not None
    assert second.record.staged["turn"] == 2
    assert Deliveries(b).acknowledge(s, second.token).turns == 2
    assert Deliveries(a).issue(s, Channel.MCP) is None
    assert a.get(s).turns == 2


def prompted(m: SessionManager, session: str, prompt: str) -> int:
    """A prompt recorded as the hook records it; its turn."""
    taken = checkpoint(m, session, prompt)
    taken.done()
    return taken.turn


def test_a_hook_sessions_turns_are_its_prompts_whatever_was_delivered(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    """Its notices say "turn 10" of the user's 10th prompt: each prompt's checkpoint
    counts one turn, and deliveries (one at the start, none for a prompt with nothing
    new, several in flight) count none."""
    a, b = two
    s = hook_session(a)
    first = Deliveries(a).issue(s, Channel.HOOK)  # at the session's start
    assert first is not None and first.record is not None and first.record.staged["turn"] == 0
    assert Deliveries(b).acknowledge(s, first.token).turns == 0
    assert [prompted(a, s, f"prompt {n}") for n in (1, 2)] == [1, 2]
    assert Deliveries(a).issue(s, Channel.HOOK) is None  # the second prompt: nothing new
    notes.write("notes/b.md", "# B\n")
    assert prompted(a, s, "prompt 3") == 3
    in_flight = Deliveries(a).issue(s, Channel.HOOK)
    assert in_flight is not None
    notes.write("notes/c.md", "# C\n")
    built = Deliveries(a).issue(s, Channel.HOOK)  # on the one still outstanding
    assert built is not None and built.record is not None and built.record.staged["turn"] == 3
    Deliveries(a).acknowledge(s, in_flight.token)
    assert Deliveries(b).acknowledge(s, built.token).turns == 3
    assert a.get(s).turns == 3


def test_every_channel_has_one_acknowledgement_rule() -> None:
    assert set(RULES) == set(Channel)
    assert RULES[Channel.MCP] is Acknowledgement.TOKEN
    assert RULES[Channel.HOOK] is Acknowledgement.TRANSCRIPT
    assert {RULES[c] for c in (Channel.CHAT, Channel.SEND, Channel.ACP)} == {
        Acknowledgement.BACKEND}


def test_a_backend_accepted_delivery_is_claimed_in_process_and_never_stored(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = a.new("p", mode="live", external_id="acp:p:1", channel=Channel.ACP)
    issued = Deliveries(a).issue(s.id, Channel.ACP)
    assert issued is not None and issued.record is None and issued.token == ""
    assert a.store.deliveries_of(s.id) == []
    Deliveries.accept(issued)
    assert not a.get(s.id).needs_manifest and a.get(s.id).turns == 0  # turns are prompts


def test_unknown_tokens_and_other_sessions_tokens_are_refused(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = a.new("p", channel=Channel.MCP)
    other = a.new("p", channel=Channel.MCP, external_id="another")
    issued = Deliveries(a).issue(s.id, Channel.MCP)
    assert issued is not None
    with pytest.raises(UsageError, match="unknown delivery token 'nope'"):
        Deliveries(a).acknowledge(s.id, "nope")
    with pytest.raises(UsageError, match="unknown delivery token"):
        Deliveries(a).acknowledge(other.id, issued.token)
    assert a.get(s.id).needs_manifest  # nothing moved


def test_a_session_is_delivered_to_only_by_the_channel_that_opened_it(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    """One owner per conversation: the hook's session is never served over MCP (nor the
    reverse); chat and send both run freshline's own agent."""
    a, _ = two
    hook = a.get(hook_session(a))
    with pytest.raises(UsageError, match="opened by the hook channel"):
        Deliveries(a).issue(hook.id, Channel.MCP)
    mcp = a.new("p", channel=Channel.MCP)
    with pytest.raises(UsageError, match="opened by the mcp channel"):
        Deliveries(a).issue(mcp.id, Channel.HOOK)
    issued = Deliveries(a).issue(hook.id, Channel.HOOK)
    assert issued is not None
    sent = a.new("p", channel=Channel.SEND)
    assert a.prepare(sent.id, "hi", conversation=False, channel=Channel.CHAT).manifest


@pytest.mark.parametrize(("opened_by", "delivers", "same"), [
    ("chat", "send", True), ("send", "chat", True),
    ("pull", "send", True), ("pull", "chat", True),  # a chat or send pulled from elsewhere
    ("pull", "mcp", False), ("pull", "hook", False), ("hook", "mcp", False),
    ("mcp", "acp", False), ("hook", "hook", True),
])
def test_owners_table(opened_by: str, delivers: str, same: bool) -> None:
    assert (owner_of(opened_by) == owner_of(delivers)) is same


def test_a_delivery_built_on_one_in_flight_says_only_what_is_new(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, b = two
    s = hook_session(a)
    first = Deliveries(a).issue(s, Channel.HOOK)
    assert first is not None and first.record is not None and first.record.manifest
    assert Deliveries(a).issue(s, Channel.HOOK) is None  # nothing beyond what is in flight
    notes.write("notes/b.md", "# B\n")
    second = Deliveries(b).issue(s, Channel.HOOK)
    assert second is not None and second.record is not None
    assert second.record.basis == first.token
    assert "project_context_updates" in second.blocks and "<project_context " not in second.blocks
    with pytest.raises(UsageError, match="not taken yet"):
        Deliveries(a).acknowledge(s, second.token)
    Deliveries(a).acknowledge(s, first.token, Acknowledgement.TRANSCRIPT)
    Deliveries(b).acknowledge(s, second.token, Acknowledgement.TRANSCRIPT)
    assert a.get(s).cursor == second.covers
    assert [d.state for d in a.store.deliveries_of(s)] == [DeliveryState.ACKNOWLEDGED] * 2


def test_superseding_a_chain_tells_all_of_it_again(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = hook_session(a)
    first = Deliveries(a).issue(s, Channel.HOOK)
    notes.write("notes/b.md", "# B\n")
    assert first is not None
    second = Deliveries(a).issue(s, Channel.HOOK)
    assert second is not None and second.record is not None and second.record.basis
    Deliveries(a).supersede(s)
    assert Deliveries(a).outstanding(s) == []
    again = Deliveries(a).issue(s, Channel.HOOK)
    assert again is not None
    assert "<project_context " in again.blocks and "notes/b.md" in again.blocks


def test_settled_deliveries_are_pruned(
    notes: Workspace, two: tuple[SessionManager, SessionManager]
) -> None:
    a, _ = two
    s = a.new("p", channel=Channel.MCP)
    for i in range(30):
        notes.write(f"notes/n{i}.md", "x")
        issued = Deliveries(a).issue(s.id, Channel.MCP)
        assert issued is not None
        Deliveries(a).acknowledge(s.id, issued.token)
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
    origin=st.none() | st.integers(0, 50),
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
def test_applied_takes_the_covered_epoch_and_keeps_closed_closed(
    staged: Staged, cursor: int | None, state: SessionState
) -> None:
    s = applied(replace(RECORD, cursor=cursor, state=state), staged)
    assert s.cursor == staged.cursor
    assert (s.state is SessionState.CLOSED) == (state is SessionState.CLOSED)
    assert not s.needs_manifest and s.pending_docs == sorted(staged.pending)
    assert s.turns == max(RECORD.turns, staged.turn)


def test_staged_from_before_origins_were_stored_reads_its_since() -> None:
    stored = Staged(since=3, cursor=5, pending=set(), failures={}, origin=3).to_json()
    del stored["origin"]
    assert Staged.from_json(stored).origin == 3


# --- the claim, pure: of deliveries built from one cursor at most one counts --------------------


@pytest.mark.parametrize(
    ("cursor", "origin", "state", "basis_taken", "expected"),
    [
        (3, 3, DeliveryState.OUTSTANDING, True, Outcome.TAKEN),
        (None, None, DeliveryState.OUTSTANDING, True, Outcome.TAKEN),  # not seeded yet
        (4, 3, DeliveryState.OUTSTANDING, True, Outcome.STALE),  # another counted first
        (None, 3, DeliveryState.OUTSTANDING, True, Outcome.STALE),
        (3, 3, DeliveryState.OUTSTANDING, False, Outcome.WAITING),
        (4, 3, DeliveryState.ACKNOWLEDGED, True, Outcome.ALREADY),
        (3, 3, DeliveryState.SUPERSEDED, True, Outcome.SUPERSEDED),
        (3, 3, None, True, Outcome.UNKNOWN),
    ],
)
def test_outcome_table(
    cursor: int | None, origin: int | None, state: DeliveryState | None, basis_taken: bool,
    expected: Outcome,
) -> None:
    assert outcome(cursor, origin, state, basis_taken) is expected


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)), min_size=1, max_size=8),
       st.randoms(use_true_random=False))
def test_claims_in_any_order_acknowledge_ranges_that_never_overlap(
    built: list[tuple[int, int]], rng: Any
) -> None:
    """Deliveries built from any cursors (each covering `origin → origin + span`),
    acknowledged in any order: the acknowledged ranges are disjoint and contiguous."""
    order = list(range(len(built)))
    rng.shuffle(order)
    cursor: int | None = 0
    taken: list[tuple[int, int]] = []
    for i in order:
        origin, span = built[i]
        if outcome(cursor, origin) is Outcome.TAKEN:
            taken.append((origin, origin + span))
            cursor = origin + span
    for before, after in zip(taken, taken[1:], strict=False):
        assert before[1] == after[0]  # each starts where the one before left the cursor
    assert all(a1 <= b0 or b1 <= a0 for i, (a0, a1) in enumerate(taken)
               for (b0, b1) in taken[i + 1:])
