"""One send, end to end: prepare → model with tools → record in git → accept.

The wire prompt (blocks + message) goes to the model; the transcript records the
message alone, so the blocks never appear in the visible conversation. If anything
fails before the backend answered, nothing is recorded and the cursor stays. A send holds
the session's turn lock from prepare to accept, so sends on one session take turns in
every process; a tool event that wrote files records the worktree's tree after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshline.agent.backends.base import Backend
from freshline.agent.loop import DEFAULT_MAX_ITERATIONS, EventCallback, run_turn
from freshline.agent.messages import Author as AgentAuthor
from freshline.agent.messages import Message, Role, TextCallback, TurnEvent
from freshline.agent.replay import replay
from freshline.agent.tools import Toolbox, ToolMode, encodable
from freshline.context import Channel
from freshline.conversation import Author, Event
from freshline.conversation import Mode as ConversationMode
from freshline.conversation.journal import checkpoint
from freshline.conversation.turnlock import WaitNotice
from freshline.materialize import Probe, is_document
from freshline.session import PreparedTurn, SessionManager
from freshline.session.delivery import changes_page
from freshline.session.ledger import TurnLedger
from freshline.session.rules import isolated_rules, live_rules
from freshline.store import SessionRecord


@dataclass
class SendResult:
    """What one send did."""

    session: str
    accepted: bool
    held: str | None
    wire_prompt: str
    response: str
    cursor_before: int | None
    cursor_after: int | None
    head: str | None = None
    refreshed: dict[str, Any] | None = None
    events: list[TurnEvent] = field(default_factory=list)


def history(manager: SessionManager, session_id: str) -> list[Message]:
    """Earlier turns as the model saw them, oldest first: each user message with the blocks
    it came with, the assistant's replies and tool calls, and the tools' results, a read
    that a later read superseded shortened to one line (`agent.replay`). A rewound
    conversation replays its transcript view: what came before the turn it went back to."""
    s = manager.get(session_id)
    root = manager.conversations.worktree(s.id) if s.mode == "isolated" else manager.config.root
    return replay(manager.conversations.transcript(session_id), str(root))


def toolbox_for(
    manager: SessionManager,
    s: SessionRecord,
    channel: Channel = Channel.SEND,
    ledger: TurnLedger | None = None,
) -> Toolbox:
    """The tools for a session: its project in the live workspace, or the conversation's
    worktree less what the project excludes (never secrets or internal files), and
    `changes`, which pages the project's changes within `channel`'s budget. With a turn's
    `ledger`, what they read and write is recorded, and writes are guarded by content."""

    def lookup(rel: str) -> Probe | None:
        if not is_document(rel):
            return None
        # A snapshot an older converter version made is made again as it is read; one not
        # converted yet is left to the background (the tool says it follows).
        return manager.materializer.for_reading(rel, manager.store.index_get(rel),
                                                waiting=False)

    def changes(since: int | None, page: int, most: int) -> str:
        return changes_page(manager, s.id, since, page, channel, limit=most).text

    if s.mode == "isolated":
        worktree = manager.conversations.worktree(s.id)
        rules = isolated_rules(manager.config.project(s.project), worktree,
                               manager.config.security.allow_hardlinks)
        return Toolbox(worktree, ToolMode.ISOLATED, rules, changes=changes, ledger=ledger,
                       withholder=manager.withholder)
    return Toolbox(
        Path(manager.config.root),
        ToolMode.LIVE,
        live_rules(manager, [s.project]),
        read_document=lookup,
        changes=changes,
        ledger=ledger,
        withholder=manager.withholder,
    )


def _encodable(value: Any) -> Any:
    """`value` with every string made encodable (a model may send lone surrogates)."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value


def _event(e: TurnEvent, tree: str | None) -> Event:
    author = Author.TOOL if e.author is AgentAuthor.TOOL else Author.ASSISTANT
    x = e.extra
    return Event(
        author,
        encodable(e.content),
        tool=x.get("tool"),
        args=_encodable(x.get("args")),
        changed=tuple(encodable(p) for p in x.get("changed", ())),
        mode_changes=tuple(encodable(p) for p in x.get("mode_changes", ())),
        tree=tree,
    )


def _tree_keeper(
    manager: SessionManager, turn: PreparedTurn
) -> tuple[EventCallback, list[str | None]]:
    """A callback recording, per event of an isolated turn, the agent's tree after it: a
    snapshot after a tool that wrote files, else the tree before. (Edits made outside the
    tools meanwhile are the human side's: the next human turn records them.)"""
    trees: list[str | None] = []
    deliberate: set[str] = set()

    def keep(e: TurnEvent) -> None:
        pending = turn.conversation
        if pending is None or pending.mode is not ConversationMode.ISOLATED:
            trees.append(None)  # live: every event saw the turn's tree
            return
        deliberate.update(e.extra.get("mode_changes", ()))
        tree = trees[-1] if trees else pending.tree
        if e.extra.get("changed"):
            checkpoint("tool:wrote")
            tree = manager.conversations.snapshot_event(pending, deliberate)
            checkpoint("tool:snapshot")
        trees.append(tree)

    return keep, trees


def complete(
    manager: SessionManager,
    turn: PreparedTurn,
    backend: Backend,
    on_text: TextCallback | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    channel: Channel = Channel.SEND,
    on_event: EventCallback | None = None,
) -> SendResult:
    """Run a prepared turn through the model, record it and accept it. `on_event` hears
    each event as it happens (for display: a turn that fails later records none)."""
    s = turn.session
    messages = [*history(manager, s.id), Message(Role.USER, turn.wire_prompt)]
    tools = toolbox_for(manager, s, channel, turn.ledger)
    keep, trees = _tree_keeper(manager, turn)

    def happened(e: TurnEvent) -> None:
        keep(e)
        if on_event is not None:
            on_event(e)

    try:
        result = run_turn(backend, messages, tools, max_iterations, on_text, happened)
        head = turn.record([_event(e, tree) for e, tree in zip(result.events, trees,
                                                               strict=True)])
    except BaseException:
        turn.abandon()
        raise
    turn.accept()
    checkpoint("accept:done")
    manager.note_withheld()
    if turn.staged.pending:
        # Documents the agent was told are converting: convert them for a later turn. With
        # none, there is nothing to convert, and listing the project would cost the send
        # the whole workspace.
        manager.materialize_async(s.project)
    after = manager.get(s.id).cursor
    refresh = turn.conversation.refresh if turn.conversation else None
    return SendResult(
        session=s.id,
        accepted=turn.accepted,
        held=turn.held,
        wire_prompt=turn.wire_prompt,
        response=result.text,
        cursor_before=s.cursor,
        cursor_after=after,
        head=head,
        refreshed=None if refresh is None else {"target": refresh.target, "to": refresh.to,
                                                "paths": list(refresh.paths)},
        events=result.events,
    )


def send(
    manager: SessionManager,
    session_id: str,
    message: str,
    backend: Backend,
    on_text: TextCallback | None = None,
    on_prepared: Callable[[PreparedTurn], None] | None = None,
    channel: Channel = Channel.SEND,
    wait: bool = True,
    on_wait: WaitNotice | None = None,
    on_event: EventCallback | None = None,
) -> SendResult:
    """Prepare, run and accept one turn, its blocks fitted to `channel`'s budget, holding
    the session's turn lock throughout.

    Raises ConflictStop / SyncRequired before the model is called, backend errors with
    nothing recorded or advanced, and SessionBusy when `wait` is False and another send on
    the session is running (`on_wait` hears who, after a second of waiting). `on_text`
    hears the model's text as it streams, `on_event` each reply and tool call as it ends.
    """
    with manager.turn_lock(session_id, wait, on_wait):
        turn = manager.prepare(session_id, message, channel=channel)
        if on_prepared is not None:
            on_prepared(turn)
        return complete(manager, turn, backend, on_text, channel=channel, on_event=on_event)
