"""Sessions: open, resume, prepare a turn, accept it (DESIGN section 7).

`prepare()` flushes the tracker, holds a dirty landing, computes the refresh of the
conversation and builds the wire prompt; it changes nothing a failed send could regret.
`PreparedTurn.accept()` runs only after the backend accepted the prompt and then moves
the cursor to the epoch the prompt covered.

Each delivery names its channel (`freshline.context.Channel`): the blocks are rendered to
that channel's budget (`[delivery]` in freshline.toml) and rolled up when they do not fit
(`session/delivery.py` pages the full list a rolled-up block points to).

The read ledger (`session/ledger.py`) reads each delivery's changes first: the session's
own writes are left out, the files its agent read that changed since open the updates
block, and other sessions' writes are named.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from freshline.config import Mode
from freshline.context import (
    Channel,
    ManifestInput,
    Meter,
    UpdatesInput,
    render_blocks,
    render_manifest,
)
from freshline.errors import FreshlineError, UsageError
from freshline.session.base import SessionBase
from freshline.session.checkpoints import live_delta
from freshline.session.claims import claim_turn
from freshline.session.delivery import delivery_budget
from freshline.session.documents import DocumentDesk
from freshline.session.lifecycle import close_idle
from freshline.session.manifest import BuiltManifest, dirty_key
from freshline.session.owners import refuse_other_owner
from freshline.session.rules import without_secrets
from freshline.session.turn import PreparedTurn, Staged, applied
from freshline.session.upgrades import announce_upgrades
from freshline.store import (
    Change,
    ChangeKind,
    IndexEntry,
    SessionRecord,
    SessionState,
)
from freshline.store.sessions import RECORDING_CHANNELS, session_title
from freshline.tracker.scoping import in_scope

if TYPE_CHECKING:  # git loads only for sessions that record a conversation
    from freshline.conversation import PendingTurn
    from freshline.conversation import Refresh as MergeInfo
    from freshline.conversation.events import Rewind
    from freshline.materialize.runner import ProgressFn


class SessionManager(SessionBase):
    """Sessions of one workspace, with the tracker, materializer and conversations they use
    (`SessionBase`): opening, resuming and closing them, preparing and accepting turns."""

    def new(
        self,
        project: str,
        mode: str | None = None,
        target: str | None = None,
        external_id: str | None = None,
        convert: bool = True,
        channel: Channel = Channel.SEND,
        progress: ProgressFn | None = None,
    ) -> SessionRecord:
        """Open a session: build its manifest and, when `channel`'s agent is one freshline
        runs (chat, send), its conversation; hooks, MCP and ACP deliver to an agent it does
        not run (a hook's and the ACP proxy's record each prompt as a checkpoint when it
        comes, `checkpoints.py`; MCP's record nothing). A clean landing of the same
        project and channel is reused; a dirty one never is. `convert=False` answers at
        once and converts the project's documents in the background (hooks); a session
        that records no conversation then also leaves a fresh workspace's files to be
        read later (`Tracker.flush(defer=True)`: its manifest needs only their paths).
        `progress` hears each conversion otherwise. Sessions left idle past
        `[sessions] idle_close` are closed first (lifecycle.close_idle)."""
        p = self.reload_config().project(project)
        chosen = Mode(mode) if mode else p.mode
        close_idle(self)
        self.tracker.flush(defer=not convert and channel.value not in RECORDING_CHANNELS)
        key = dirty_key(self.config, self.tracker, project)
        for s in self.store.session_list(project):
            reusable = s.state is SessionState.LANDING and s.dirty_key == key
            same = (s.mode, s.target, s.external_id, s.channel) == (
                chosen.value, target, None, channel.value)
            if reusable and same and not external_id:
                return s
        session_id = os.urandom(6).hex()  # `secrets.token_hex(6)`, as in `engine.new_token`
        # Flushed just above: a second walk of the workspace would find nothing new.
        built = self._build(project, session_id, chosen.value, convert=convert, flush=False,
                             progress=progress, channel=channel.value)
        if channel.value in RECORDING_CHANNELS:
            from freshline.conversation import Mode as ConversationMode

            entries = self.in_scope.entries(project)
            self.conversations.open(
                session_id, ConversationMode(chosen.value), target, entries, project=project
            )
        now = time.time()
        record = SessionRecord(
            id=session_id,
            project=project,
            state=SessionState.LANDING,
            mode=chosen.value,
            created_at=now,
            resumed_at=None,
            cursor=built.epoch if built.complete else None,
            manifest_epoch=built.epoch,
            dirty_key=built.dirty_key,
            held_key=None,
            manifest=built.stored,
            needs_manifest=True,
            resumed=False,
            pending_docs=built.pending,
            external_id=external_id,
            target=target,
            channel=channel.value,
            active_at=now,
        )
        self.store.session_put(record)
        if built.pending and not convert:
            self.materialize_async(project)
        return record

    def resume(self, session_id: str, convert: bool = True, closed: bool = True) -> SessionRecord:
        """Reopen a session: its manifest is rebuilt and delivered on the next send, with a
        note that the project may have changed while it was closed (`convert` as in `new`).
        `closed=False` is for an agent that lost its context without being closed (it
        compacted or cleared its conversation): the manifest comes again, without the note."""
        self.reload_config()
        s = self.get(session_id)
        built = self._build(s.project, s.id, s.mode, resumed=closed, convert=convert,
                            channel=s.channel)
        if built.pending and not convert:
            self.materialize_async(s.project)
        with self.store.write():  # re-read: another process may have accepted a turn
            s = self.get(session_id)
            s = self._resumed(s, built, closed)
            self.store.session_put(s)
        return s

    @staticmethod
    def _resumed(s: SessionRecord, built: BuiltManifest, closed: bool) -> SessionRecord:
        return replace(
            s,
            state=SessionState.ACTIVE if s.state is not SessionState.LANDING else s.state,
            resumed_at=time.time(),
            cursor=built.epoch if built.complete else s.cursor,
            manifest_epoch=built.epoch,
            dirty_key=built.dirty_key,
            manifest=built.stored,
            needs_manifest=True,
            resumed=closed,
            pending_docs=sorted(set(s.pending_docs) | set(built.pending)),
        )

    def reopen(self, session_id: str) -> SessionRecord:
        """Reopen a closed session as it was, for an agent that resumes its own
        conversation and so still holds what it was told: the next send brings only what
        changed meanwhile (no manifest)."""
        with self.store.write():
            s = self.get(session_id)
            if s.state is SessionState.CLOSED:
                s = replace(s, state=SessionState.ACTIVE, resumed_at=time.time())
                self.store.session_put(s)
        return s

    def close_session(self, session_id: str) -> SessionRecord:
        """Mark a session closed (resume reopens it)."""
        with self.store.write():
            s = replace(self.get(session_id), state=SessionState.CLOSED)
            self.store.session_put(s)
        return s

    def sync(self, session_id: str, rev: str, with_conflicts: bool = False) -> MergeInfo | None:
        """Merge `rev` into an isolated session's conversation now; what the merge changed
        in the project's scope reaches the agent with the next send."""
        s = self.get(session_id)
        scope = self.reload_config().project(s.project).scope
        return self.conversations.sync(session_id, rev, with_conflicts, scope.matches_path)

    # -- turns ---------------------------------------------------------------------------

    def prepare(
        self,
        session_id: str,
        message: str,
        fanout: bool = False,
        conversation: bool = True,
        channel: Channel = Channel.SEND,
        meter: Meter | None = None,
        token: str | None = None,
        after: Sequence[Staged] = (),
        flush: bool = True,
        limit: int | None = None,
        known: SessionRecord | None = None,
        rewinds: Sequence[Rewind] = (),
    ) -> PreparedTurn:
        """Flush, hold if needed, refresh the conversation, and build the wire prompt.

        Raises ConflictStop or SyncRequired (before any model is called) when the
        conversation's refresh cannot merge, and UsageError when the session belongs to
        another channel (`owners.refuse_other_owner`). `conversation=False` is for blocks
        delivered to an agent freshline does not run (hooks, MCP): there is no answer to
        record, so the conversation is left as it is. The blocks fit `channel`'s budget
        (at most `limit` characters) as `meter` counts what the channel delivers (default:
        the text itself), and carry the delivery `token` in their opening tags. `after`
        prepares as if these staged deliveries, handed over but not yet acknowledged, had
        been taken (in order). `flush=False` is for a caller that flushed a moment ago (it
        just opened the session): the turn covers the index as it is. `known` is the
        session as the caller read it a moment ago (not read again; one that records a
        conversation is, for its recovery). `rewinds`: rewinds to tell that the turn does
        not read from a conversation of its own (a checkpoint session's).
        """
        self.reload_config()
        s = known
        if s is None or s.id != session_id or s.records_conversation:
            s = self.get(session_id)
        refuse_other_owner(s, channel.value)
        for staged in after:
            s = applied(s, staged)
        if s.state is SessionState.CLOSED:
            raise UsageError(f"session '{session_id}' is closed; run `freshline session resume "
                             f"{session_id}`")
        origin = s.cursor  # acknowledging checks that the cursor is still this
        self.store.session_touch(s.id, time.time())
        if flush:
            self.tracker.flush()
        held, rebuilt = self._hold(s)
        announce_upgrades(self, s.project)  # after the hold: no landing rebuilt for it
        if rebuilt is not None:
            # The fresh manifest covers everything up to its epoch: announce only what
            # follows it, and carry the documents it left in progress.
            s = replace(
                s,
                cursor=rebuilt.epoch if rebuilt.complete else None,
                manifest_epoch=rebuilt.epoch,
                manifest=rebuilt.stored,
                dirty_key=rebuilt.dirty_key,
                pending_docs=sorted(set(s.pending_docs) | set(rebuilt.pending)),
            )
        recorded = conversation and s.records_conversation
        pending = self._conversation_turn(s, message) if recorded else None
        staged, updates = self._updates(s, pending.merges if pending else (),
                                        pending.rewinds if pending else rewinds)
        staged.origin = origin
        if rebuilt is not None:
            staged.manifest = (rebuilt.stored, rebuilt.epoch, rebuilt.dirty_key)
        manifest = self._manifest_input(s) if s.needs_manifest else None
        if manifest is None and updates.compacted:
            manifest = self._fresh_manifest(s, staged)
        budget = delivery_budget(self.config, channel, meter, s.id, limit, token)
        blocks = render_blocks(manifest, updates, budget, self.priority(s))
        # Blocks hold paths only, but a file may be named after a token.
        shown, updated = (self.withholder.text(b).text if b else b
                          for b in (blocks.manifest, blocks.updates))
        turn = PreparedTurn(s, message, shown, updated, held, fanout, staged, pending)
        turn.listed = blocks.listed
        # A checkpoint session's prompt was counted when it was recorded (checkpoints.py).
        turn.number = s.turns if s.checkpoints else s.turns + 1
        # A turn that carries nothing (an empty send) counts as no turn delivered.
        staged.turn = turn.number if turn.wire_prompt else 0
        turn.ledger = self.ledger.for_turn(s, turn.number)
        turn._accept = self._accept
        return turn

    def preview(
        self, session_id: str, channel: Channel = Channel.SEND, meter: Meter | None = None
    ) -> str | None:
        """The blocks the next send on `channel` would deliver, at its budget: the manifest
        when one is due, and the updates, with the refresh the send would merge worked out
        in memory (delivers, holds and moves nothing). Raises ConflictStop or SyncRequired
        when the next send would stop on one."""
        self.reload_config()
        s = self.get(session_id)
        self.tracker.flush()
        merges: Sequence[MergeInfo] = ()
        rewinds: Sequence[Rewind] = ()
        if s.records_conversation:
            scope = self.config.project(s.project).scope
            pending = self.conversations.preview_turn(s.id, scope.matches_path)
            merges, rewinds = pending.merges, pending.rewinds
        staged, updates = self._updates(s, merges, rewinds)
        manifest = self._manifest_input(s) if s.needs_manifest else None
        if manifest is None and updates.compacted:
            manifest = self._fresh_manifest(s, staged)
        budget = delivery_budget(self.config, channel, meter, s.id)
        blocks = render_blocks(manifest, updates, budget, self.priority(s)).text
        return self.withholder.text(blocks).text if blocks else blocks

    def manifest_text(self, session_id: str, channel: Channel | None = None) -> str:
        """The session's manifest block as stored, rendered to `channel`'s budget (none:
        with no budget)."""
        s = self.get(session_id)
        budget = delivery_budget(self.config, channel, session=s.id) if channel else None
        return self.withholder.text(render_manifest(self._manifest_input(s), budget)).text

    def _fresh_manifest(self, s: SessionRecord, staged: Staged) -> ManifestInput:
        """The project as it is now, for a session the change log no longer reaches (not
        even as counts): what it stages goes with the turn, like a rebuilt landing's."""
        fresh = self._build(s.project, s.id, s.mode, convert=False, flush=False,
                            channel=s.channel)
        staged.manifest = (fresh.stored, fresh.epoch, fresh.dirty_key)
        staged.pending |= set(fresh.pending)
        return fresh.input

    def _hold(self, s: SessionRecord) -> tuple[str | None, BuiltManifest | None]:
        if s.state is not SessionState.LANDING:
            return None, None
        key = dirty_key(self.config, self.tracker, s.project)
        if key in (s.dirty_key, s.held_key):
            return None, None
        why = f"the project changed before the first send ({s.dirty_key} → {key})"
        try:
            built = self._build(s.project, s.id, s.mode, channel=s.channel)
        except FreshlineError as exc:
            built, why = None, f"{why}; re-materializing failed: {exc}"
        if built is None or not built.complete:
            # Send with the stale manifest, and never hold again for this dirty key.
            with self.store.write():
                self.store.session_put(replace(self.get(s.id), held_key=key))
            return why + "; sent with the previous manifest", None
        return why, built

    def _conversation_turn(self, s: SessionRecord, message: str) -> PendingTurn:
        scope = self.config.project(s.project).scope
        if s.mode != Mode.LIVE.value:
            return self.conversations.prepare_turn(s.id, message, path_filter=scope.matches_path)
        # Read first: whatever is listed next is at least this new, so the tree covers it.
        epoch = self.tracker.epoch(s.project)
        pending = self.conversations.prepare_turn(
            s.id, message, self._lazy_entries(s.project), delta=live_delta(self, s)
        )
        self._live_written[s.id] = (pending.tree, epoch)  # stored by `_accept`
        return pending

    def _lazy_entries(self, project: str) -> Iterator[IndexEntry]:
        # Listed only if iterated: a turn the delta covers never walks the project.
        yield from self.in_scope.entries(project)

    def _updates(
        self, s: SessionRecord, merges: Sequence[MergeInfo], rewinds: Sequence[Rewind] = ()
    ) -> tuple[Staged, UpdatesInput]:
        since = s.cursor if s.cursor is not None else s.manifest_epoch
        project = self.config.project(s.project)
        answer = self.tracker.changes_since(s.project, since)
        answer = replace(answer, changes=without_secrets(answer.changes, project.allow_secrets))
        scope = project.scope
        desk = DocumentDesk(self.materializer, self.store.index_get)

        def live_in_scope(path: str) -> bool:
            return in_scope(scope, self.store.index_get(path))

        worktree = self._agent_root(s.id, s.mode)
        if worktree is not None:
            # The agent's tree changes only through its own edits and refreshes: the
            # checkout's uncommitted edits are not in it, so they are not announced.
            configs = [c for c in answer.changes if c.kind is ChangeKind.CONFIG]
            answer = replace(answer, changes=configs, compacted=False, folded=[],
                             forgotten=False)
        news = desk.news(answer.changes, s.pending_docs, s.announced_failures, live_in_scope)
        compacted = [Change(ChangeKind.COMPACTED, "")] if answer.forgotten else []
        refreshed = [_refresh_entry(m) for m in merges]
        seen = self.ledger.news(s, [] if compacted else answer.changes, refreshed, worktree)
        updates = UpdatesInput.from_changes(
            s.project,
            str(worktree or self.config.root),
            since,
            answer.epoch,
            [*(compacted or seen.kept(answer.changes)), *refreshed,
             *_rewind_entries(rewinds)],
            stale=seen.stale,
            writers=seen.writers,
            documents=news.documents,
            ready_documents=news.ready,
            failed_documents=news.failed,
            invalid_snapshots=news.invalid,
            folded=answer.folded,
        )
        staged = Staged(
            since=since, cursor=answer.epoch, pending=news.pending, failures=news.failures,
            told=updates,
        )
        return staged, updates

    def _accept(self, turn: PreparedTurn) -> None:
        """The backend accepted the turn: claim it (a compare-and-set on the cursor it was
        built on; `claims.claim_turn`) with its ledger entries, title and live tree."""

        def finish(s: SessionRecord) -> SessionRecord:
            if turn.ledger is not None:
                self.store.ledger_put(turn.ledger.staged)
            s = replace(s, title=s.title or session_title(turn.message))
            written = self._live_written.pop(s.id, None)
            if written is not None and turn.conversation and turn.conversation.tree == written[0]:
                s = replace(s, live_tree=written[0], live_epoch=written[1])
            return s

        claim_turn(self.store, turn.session.id, turn.staged, finish)


def _refresh_entry(merge: MergeInfo) -> Change:
    from freshline.conversation.conflicts import path_kinds

    detail = {
        "target": merge.target,
        "from": merge.from_rev or "",
        "to": merge.to,
        "paths": list(merge.paths),
        "conflicts": list(merge.conflict_paths),
        "conflict_kinds": path_kinds(merge.conflicts),
    }
    return Change(ChangeKind.REFRESHED, "", detail=detail)


def _rewind_entries(rewinds: Sequence[Rewind]) -> list[Change]:
    """The updates block's entries of a turn's rewinds (the rewinding module, and git
    with it, load only when there are some)."""
    if not rewinds:
        return []
    from freshline.session.rewinding import rewind_entry

    return [rewind_entry(r) for r in rewinds]
