"""Rewinding the files of an agent freshline does not run to where one of its prompts began.

A checkpoint session (a hook's, the ACP proxy's) has a conversation of checkpoints: each
prompt's tree is the project's files as the prompt found them (`checkpoints.py`). Its
rewind puts the project's files in the user's workspace back to such a tree, whoever
changed them since: the agent, with any tool (its Write as much as its Bash), the user,
git, another session. Only the files: the transcript is the agent's own, and a rewind of
it is refused with the way to do it in that agent.

Only paths that differ between the turn's tree and the files now (as a checkpoint would
record them: in scope, secrets withheld) are touched: a file the project no longer
includes is never written, nor anything outside the project. The paths changed since
that turn by someone other than the agent (its own writes are the read ledger's, tools
and shell windows alike, from that turn on) are named first and need a yes. A rewind is
refused while the agent is mid-turn (its prompt came and its answer has not ended): its
tools may be writing. The rewind is one more event of the conversation; the agent's next
prompt is told which paths it changed, and those files count as its own (they are not
told again as someone else's edits).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

from freshline.conversation import views
from freshline.conversation.events import RewindMode
from freshline.conversation.rewind import RewindPlan
from freshline.errors import RewindStop, UsageError
from freshline.session.base import SessionBase
from freshline.session.checkpoints import finish, live_delta
from freshline.session.provenance import ABSENT
from freshline.session.rewinding import (
    Confirm,
    RewindResult,
    others_changed,
    own_writes,
    stop_message,
)
from freshline.store import LedgerEntry, LedgerKind, SessionRecord, SessionState


def rewind_files(
    manager: SessionBase,
    s: SessionRecord,
    turn: str,
    mode: RewindMode = RewindMode.CODE,
    force: bool = False,
    confirm: Confirm | None = None,
    transcript_hint: str | None = None,
) -> RewindResult:
    """Put the project's files back as they were when the prompt of `turn` (its number or
    commit id in `log`) came. UsageError for a rewind of the transcript (with
    `transcript_hint`, how to do it in the agent), an agent mid-turn (unless `force`), a
    session with no prompt yet or a bad turn; RewindStop when others' changes would be
    overwritten and `confirm` does not say yes."""
    if mode.restores_transcript:
        hint = transcript_hint or "rewind it in the agent itself"
        raise UsageError(f"session {s.id}'s transcript is its agent's own: {hint}; "
                         "`freshline rewind --code` puts back the files")
    _refuse_mid_turn(manager, s, force)
    finish(manager, s.id)  # a prompt a killed process answered is a turn too
    conversations = manager.conversations
    if not conversations.exists(s.id):
        raise UsageError(f"session {s.id} has recorded no prompt yet: there is nothing to "
                         "rewind")
    with conversations.rewinding(s.id):
        manager.tracker.flush()
        s = manager.store.session_get(s.id)
        events = conversations.log(s.id)
        index = views.find_turn(events, turn)
        planned = conversations.plan_rewind(s.id, turn, RewindMode.CODE, None,
                                            _differing(manager, s, events[index].tree or ""))
        written = own_writes(manager, s, events, index)
        overwrites = others_changed(manager, s, planned.restored, written)
        # The agent knows its own writes since its last prompt (no event records them):
        # every file the rewind writes is one to read again.
        told = replace(planned.rewind, paths=planned.restored)
        planned = replace(planned, overwrites=overwrites, rewind=told)
        if overwrites and not (confirm is not None and confirm(planned)):
            raise RewindStop(stop_message(planned), {o.path: o.by.value for o in overwrites})
        head = conversations.apply_rewind(planned)
    _count_as_own(manager, s, planned)
    return RewindResult(s.id, head, planned.rewind, planned.restored, planned.overwrites,
                        events[index].content)


def _refuse_mid_turn(manager: SessionBase, s: SessionRecord, force: bool) -> None:
    """UsageError while the agent is answering a prompt (its tools may be writing)."""
    state = manager.store.turn_state(s.id)
    if state is None or force or s.state is SessionState.CLOSED:
        return
    began = time.strftime("%H:%M:%S", time.localtime(state.at))
    raise UsageError(f"session {s.id}'s agent is mid-turn (turn {state.turn} began at {began} "
                     "and its answer has not ended): rewind once it has answered, or "
                     "--force if it is gone; nothing was changed")


def _differing(manager: SessionBase, s: SessionRecord, then: str) -> list[str]:
    """The paths whose files differ from tree `then` now, as a checkpoint records them; a
    path `then` holds that is on disk but not in the project now (it left the scope, it
    holds a hard link) is never one of them."""
    from freshline.conversation import checkpoints

    repo = manager.conversations.repo_of(s.id)
    now = checkpoints.files_now(repo, s.id, live_delta(manager, s),
                                lambda: manager.in_scope.entries(s.project))
    root = manager.config.root
    return sorted({c.path for c in repo.git.diff_trees(then, now)
                   if not (c.status == "D" and os.path.lexists(root / c.path))})


def _count_as_own(manager: SessionBase, s: SessionRecord, planned: RewindPlan) -> None:
    """The files the rewind wrote are told to the agent as the rewind's (its `rewound`
    entry), not again as someone else's edits: the read ledger takes them as its own."""
    turn = max(manager.store.session_get(s.id).turns, 1)
    manager.store.ledger_put(
        LedgerEntry(s.id, path, LedgerKind.WRITE, entry[1] if entry else ABSENT, turn)
        for path, entry in sorted(planned.files.items()))
