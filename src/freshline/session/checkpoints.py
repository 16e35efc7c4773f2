"""Checkpoints of the agents freshline does not run: each prompt, the files it found.

A session of another agent (a hook's, the ACP proxy's: `SessionRecord.checkpoints`) keeps
no transcript here, but each of its prompts is recorded on its own conversation
(`conversation/checkpoints.py`): a human event whose tree is the project's files as the
prompt found them, built from what the tracker logged since the previous prompt (the
session keeps that tree and the epoch it covers, `live_tree` and `live_epoch`). The
prompts are the session's turns: the n-th prompt is turn n, in `log`, in `rewind`, in the
read ledger and in what the updates block says ("you read X at turn 7").

A checkpoint is written after the prompt is answered (`Taken.done`, which the hook calls
once its answer is out): until then its objects are in memory and, in the transaction
that counts the prompt, in the store (`CHECKPOINT_KEY`, the recording's journal), so a
process killed in between leaves it to the next one that reads the conversation (`finish`:
the next prompt, a rewind, `log`, `diff`), tree and all, as the prompt found the files.

Between a prompt and the end of its answer the agent is mid-turn (`TurnState`): a rewind
is refused meanwhile (`checkpoint_rewind.py`). A shell tool's run is a window in that
turn: what changed in the project between the tool's start and its end is the agent's own
write (`tool_window`, `close_window`), since a shell names no file; an edit someone else
made in that same window is counted with it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from freshline.errors import UsageError
from freshline.session.base import SessionBase
from freshline.session.provenance import ABSENT
from freshline.store import Change, ChangeKind, LedgerEntry, LedgerKind, SessionRecord, Store
from freshline.store.sessions import CHECKPOINT_KEY, TurnState
from freshline.tracker import Tracker

if TYPE_CHECKING:  # git loads with the first checkpoint
    from freshline.conversation.checkpoints import Recording
    from freshline.conversation.events import Rewind
    from freshline.conversation.trees import LiveDelta

_PROJECT_LEVEL = (ChangeKind.CONFIG, ChangeKind.COMPACTED, ChangeKind.GIT)


@dataclass
class Taken:
    """A prompt recorded: its turn, the rewinds to tell with it, and `done`, which writes
    its objects and moves its ref (once the answer is out; once only)."""

    turn: int
    rewinds: tuple[Rewind, ...]
    base: SessionBase
    session_id: str
    recording: Recording | None  # None: nothing left to write
    head: str = ""

    def done(self) -> str:
        """The prompt's event, written now if it was not yet (ConversationMoved when the
        ref kept moving)."""
        if self.recording is not None:
            self.head = _write(self.base, self.session_id, self.recording)
            self.recording = None
        return self.head


def checkpoint(base: SessionBase, session_id: str, prompt: str) -> Taken:
    """Record the session's next prompt as a checkpoint (the tracker flushed first) and
    open its turn; call `Taken.done` once the answer is out. It takes no turn lock: a
    rewind recorded meanwhile moves the ref first, and the checkpoint follows it
    (compare-and-swap), holding the files as the prompt found them. UsageError for a
    session that takes no checkpoints."""
    s = base.store.session_get(session_id)
    if not s.checkpoints:
        raise UsageError(f"session {s.id} records its own conversation ({s.channel}): its "
                         "turns are recorded by freshline's send")
    from freshline.conversation import checkpoints

    finish(base, s.id)
    repo = base.conversations.live_repo(s.id)
    base.tracker.flush()
    epoch = base.tracker.epoch(s.project)  # read first: the tree covers at least this
    recording = checkpoints.record(repo, s.id, prompt, live_delta(base, s),
                                   lambda: base.in_scope.entries(s.project), s.project)
    with base.store.write():
        s = base.store.session_get(s.id)
        s = replace(s, turns=s.turns + 1, live_tree=recording.tree, live_epoch=epoch,
                    active_at=time.time())
        base.store.session_put(s)
        base.store.turn_state_put(s.id, TurnState(s.turns, time.time()))
        base.store.meta_set(CHECKPOINT_KEY.format(session=s.id), recording.journal())
    base.note_withheld()
    return Taken(s.turns, recording.rewinds, base, s.id, recording)


def finish(base: SessionBase, session_id: str) -> None:
    """Write the session's last checkpoint if a process left it unwritten (killed after
    answering its prompt): its journal in the store."""
    journal = base.store.meta_get(CHECKPOINT_KEY.format(session=session_id))
    if journal:
        from freshline.conversation.checkpoints import Recording

        _write(base, session_id, Recording.from_journal(journal))


def _write(base: SessionBase, session_id: str, recording: Recording) -> str:
    """Write a recording, then let its journal go (unless a later prompt's replaced it)."""
    from freshline.conversation import checkpoints

    head = checkpoints.write(base.conversations.live_repo(session_id), recording).head
    key = CHECKPOINT_KEY.format(session=session_id)
    with base.store.write():
        journal = base.store.meta_get(key)
        if journal and checkpoints.Recording.from_journal(journal).commit == recording.commit:
            base.store.meta_set(key, "")
    return head


def live_delta(base: SessionBase, s: SessionRecord) -> LiveDelta | None:
    """What changed in the project's scope since the session's last tree was written, to
    apply to that tree; None when only a whole listing can say (`InScope.since`)."""
    if s.live_tree is None or s.live_epoch is None:
        return None
    delta = base.in_scope.since(s.project, s.live_epoch)
    if delta is None:
        return None
    from freshline.conversation import LiveDelta

    return LiveDelta(tuple(delta.changed.values()), tuple(delta.removed), s.live_tree)


def end_turn(store: Store, session_id: str) -> None:
    """The agent finished answering (or its session ended): it is between turns, and a
    shell tool it left running counts for nothing more."""
    if store.turn_state(session_id) is not None:
        store.turn_state_put(session_id, None)


def tool_window(tracker: Tracker, s: SessionRecord, key: str) -> None:
    """A shell tool starts: note the project's epoch (after a flush), so what changes
    until it ends is the agent's."""
    tracker.flush()
    store = tracker.store
    with store.write():
        state = store.turn_state(s.id) or TurnState(s.turns, time.time())
        state.tools[key] = tracker.epoch(s.project)
        store.turn_state_put(s.id, state)


def close_window(tracker: Tracker, s: SessionRecord, key: str) -> list[str] | None:
    """A shell tool ended: record what changed in the project since it started as the
    agent's own writes (the read ledger: they are not told back to it); the paths, or
    None when its start was never seen (a hook installed while it ran)."""
    store = tracker.store
    state = store.turn_state(s.id)
    started = state.tools.get(key) if state is not None else None
    if state is None or started is None:
        return None
    tracker.flush()
    answer = tracker.changes_since(s.project, started, undone=True)
    written = _written(store, answer.changes)
    with store.write():
        store.ledger_put(LedgerEntry(s.id, path, LedgerKind.WRITE, blob, state.turn)
                         for path, blob in sorted(written.items()))
        fresh = store.turn_state(s.id)
        if fresh is not None:
            fresh.tools.pop(key, None)
            store.turn_state_put(s.id, fresh)
    return sorted(written)


def _written(store: Store, changes: Sequence[Change]) -> dict[str, str]:
    """Each path the changes touched → what it holds now (ABSENT: gone)."""
    written: dict[str, str] = {}
    for c in changes:
        if not c.path or c.kind in _PROJECT_LEVEL or (c.detail or {}).get("folder"):
            continue  # a project-level entry, or a folder's summary of its files' entries
        if c.old_path:
            written[c.old_path] = ABSENT
        entry = store.index_get(c.path)
        written[c.path] = entry.blob if entry is not None else ABSENT
    return written
