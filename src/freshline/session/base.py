"""The parts every session operation works with, and what helpers may use without the
manager: the workspace's config, tracker, store, materializer and conversations; sessions
by id; the read ledger; manifests as built; document conversions.

`SessionManager` (`manager.py`) adds opening, resuming and closing sessions and preparing
and accepting turns. Modules the manager uses (`lifecycle.py`, `rules.py`, `delivery.py`)
take a `SessionBase`, so no module of the session layer imports the manager it serves.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import Config, Mode
from freshline.context import Channel, ManifestInput, manifest_from_json
from freshline.errors import FreshlineError
from freshline.materialize import (
    DocStatus,
    Materializer,
    MaterializeResult,
    MaterializeSettings,
    census,
    is_document,
)
from freshline.session.inscope import InScope
from freshline.session.ledger import Ledger
from freshline.session.manifest import BuiltManifest, build_manifest
from freshline.session.upgrades import announce_upgrades
from freshline.store import IndexEntry, LedgerKind, SessionRecord, SessionState, WithheldRow
from freshline.store.sessions import PULLED
from freshline.tracker import FlushResult, Tracker
from freshline.withholding import Withholder

if TYPE_CHECKING:  # git loads only for sessions that record a conversation
    from concurrent.futures import Future

    from freshline.conversation import Conversations
    from freshline.conversation.turnlock import WaitNotice
    from freshline.materialize.runner import ProgressFn


def materialize_settings(config: Config) -> MaterializeSettings:
    """The materializer's limits from `[workspace]`."""
    w = config.workspace
    return MaterializeSettings(
        workers=w.workers, timeout_s=w.materialize_timeout_s, memory_mb=w.materialize_memory_mb
    )


class SessionBase:
    """The parts of one workspace's sessions (see the module docstring)."""

    def __init__(
        self, config: Config, materializer: Materializer | None = None, ledger: bool = True
    ) -> None:
        self.config = config
        self.tracker = Tracker(config)
        self.store = self.tracker.store
        security = config.security
        # What leaves for a model passes it: tool results, documents, snapshots, trees.
        self.withholder = Withholder(security.allow_secrets_in, security.allow_hardlinks)
        self.materializer = materializer or Materializer(
            config.root, config.data_dir, materialize_settings(config), self.withholder
        )
        self.in_scope = InScope(config, self.tracker)
        self.ledger = Ledger(self.store, enabled=ledger)  # off: the bench's baseline
        self._background: list[threading.Thread] = []
        self._live_written: dict[str, tuple[str, int]] = {}  # session → (live tree, epoch)
        self.upgrades_checked: set[str] = set()  # projects `upgrades.announce_upgrades` saw

    @cached_property
    def conversations(self) -> Conversations:
        """The workspace's conversations, opened on first use: a session that records
        none (a hook's) never touches git."""
        from freshline.conversation import Conversations

        return Conversations(self.config.root, max_blob=self.config.conversations.max_blob_bytes,
                             screen=self.withholder)

    def reload_config(self) -> Config:
        """Pick up an edited freshline.toml (a long-lived manager, e.g. the chat, would
        otherwise never see a scope change). Raises ConfigError for a broken file."""
        self.config = self.in_scope.config = self.tracker.reload_config()
        self.withholder.allowed = self.config.security.allow_secrets_in
        self.withholder.allow_hardlinks = self.config.security.allow_hardlinks
        return self.config

    def note_withheld(self) -> None:
        """Store which files secrets were withheld from since the last call (what
        `freshline status` flags). Call outside a read transaction."""
        found = self.withholder.take_found()
        if found:
            self.store.withheld_note(
                WithheldRow(path, f.blob, tuple(k.value for k in f.kinds))
                for path, f in found.items()
            )

    def close(self) -> None:
        """Wait for background conversions, then stop the workers."""
        self.settle()
        self.materializer.close()

    # -- sessions ------------------------------------------------------------------------

    def get(self, session_id: str) -> SessionRecord:
        """One session (NotFoundError when unknown), after rolling back a turn a dead
        process left unfinished in its conversation (a live turn is left alone)."""
        s = self.store.session_get(session_id)
        if s.records_conversation:  # a hook's or MCP client's session has none to recover
            self.conversations.recover(s.id)
        return s

    def get_owned(self, session_id: str) -> tuple[SessionRecord, str | None]:
        """`get`, and who opened the session over HTTP (None: nobody did), in one read."""
        s, owner = self.store.session_owned(session_id)
        if s.records_conversation:
            self.conversations.recover(s.id)
        return s, owner

    def sessions(self, project: str | None = None) -> list[SessionRecord]:
        """Every session, or those of one project."""
        return self.store.session_list(project)

    def entry(self, rel: str) -> IndexEntry | None:
        """The index's entry for a workspace path, as last scanned."""
        return self.store.index_get(rel)

    def by_external(self, external_id: str) -> SessionRecord | None:
        """The session bound to another agent's session (a hook's, the ACP proxy's), if
        any."""
        return self.store.session_by_external(external_id)

    def retire(self, session_id: str) -> SessionRecord:
        """Close a session and free its external id (`…@<session id>`): the agent reused
        its own session id for a new conversation."""
        with self.store.write():
            s = self.get(session_id)
            s = replace(s, external_id=f"{s.external_id}@{s.id}", state=SessionState.CLOSED)
            self.store.session_put(s)
        return s

    def turn_lock(
        self, session_id: str, wait: bool = True, on_wait: WaitNotice | None = None
    ) -> AbstractContextManager[None]:
        """Hold the session's turn lock: one turn at a time across threads and processes
        (`agent.runtime.send` holds it from prepare to accept). Taking it first rolls back
        a turn a dead process left unfinished. Raises SessionBusy when `wait` is False and
        a turn is running; `on_wait` hears who holds it after a second of waiting."""
        return self.conversations.lock(session_id, wait, on_wait)


    def priority(self, s: SessionRecord) -> frozenset[str]:
        """The paths a roll-up keeps listed longest for this session: those its agent read
        or wrote (the read ledger) that changed since its cursor."""
        return self.ledger.paths(s)

    def record_read(
        self, session_id: str, path: str, blob: str, turn: int | None = None
    ) -> None:
        """Record in the read ledger that the session's agent read `blob` (a git blob id)
        at workspace-relative `path`, in `turn` (default: its last delivery's)."""
        self.ledger.record(session_id, path, blob, LedgerKind.READ, turn)

    def record_write(
        self, session_id: str, path: str, blob: str, turn: int | None = None
    ) -> None:
        """Record that a tool of the session wrote `blob` at `path` (`""`: deleted it), so
        the change is not announced back to it and is attributed to it elsewhere."""
        self.ledger.record(session_id, path, blob, LedgerKind.WRITE, turn)

    def _manifest_input(self, s: SessionRecord) -> ManifestInput:
        """The manifest a session stored; a record from before manifests were stored as
        their input is built again."""
        try:
            return manifest_from_json(s.manifest)
        except FreshlineError:
            return self._build(s.project, s.id, s.mode, s.resumed, convert=False).input

    def _agent_root(self, session_id: str, mode: str) -> Path | None:
        """Where an isolated session's agent reads and writes; None for live sessions."""
        if mode != Mode.ISOLATED.value:
            return None
        return self.conversations.worktree(session_id)

    def _build(
        self,
        project: str,
        session_id: str,
        mode: str,
        resumed: bool = False,
        convert: bool = True,
        flush: bool = True,
        progress: ProgressFn | None = None,
        channel: str = Channel.SEND.value,
    ) -> BuiltManifest:
        """The project's manifest for a session on `channel` (its stored form sized to
        that channel's budget)."""
        return build_manifest(
            self.config,
            self.tracker,
            self.materializer,
            project,
            resumed,
            self.in_scope.entries,
            self._agent_root(session_id, mode),
            convert,
            flush,
            progress,
            # A pulled conversation is continued by `send` or the chat: a send's budget.
            self.config.delivery.budget(Channel.SEND.value if channel == PULLED else channel),
        )

    # -- documents -----------------------------------------------------------------------

    def materialize(
        self,
        project: str,
        retry_failed: bool = False,
        progress: ProgressFn | None = None,
        flush: bool = True,
    ) -> MaterializeResult:
        """Convert the project's documents now (as the index has them, with `flush=False`)."""
        if flush:
            self.tracker.flush()
        entries = [e for e in self.tracker.files_in_scope(project) if is_document(e.path)]
        result = self.materializer.ensure(
            project, self.tracker.epoch(project), entries, retry_failed, progress
        )
        self.note_withheld()
        return result

    def convert_changed(self, result: FlushResult) -> list[Future[MaterializeResult]]:
        """Start converting, in the background, the projects whose flush touched a document
        (a watcher's flushes feed this; they may have read a newer config than ours)."""
        self.reload_config()
        runs = []
        for name, delta in result.projects.items():
            if name in self.config.projects and any(is_document(c.path) for c in delta.changes):
                runs.append(self.materializer.submit(name, delta.epoch, self._documents(name)))
        return runs

    def convert_pending(self) -> list[Future[MaterializeResult]]:
        """Start converting, in the background, each project with a document not converted
        yet or changed since (a watcher does this when it starts and when the config
        changed: a new project's documents, say)."""
        runs = []
        for name in self.reload_config().projects:
            announce_upgrades(self, name)
            documents = self._documents(name)
            waiting = census(self.materializer.store, self.config.root, documents)
            if waiting.get(DocStatus.PENDING) or waiting.get(DocStatus.STALE):
                runs.append(self.materializer.submit(name, self.tracker.epoch(name), documents))
        return runs

    def _documents(self, project: str) -> list[IndexEntry]:
        return [e for e in self.in_scope.entries(project) if is_document(e.path)]

    def prune_documents(self, dry_run: bool = False) -> list[Path]:
        """Drop snapshots and failure markers of documents no longer in any project
        (`dry_run`: only say which)."""
        keep = {e.path for p in self.reload_config().projects for e in self.in_scope.entries(p)}
        return self.materializer.prune(sorted(keep), dry_run)

    def materialize_async(self, project: str) -> None:
        """Convert the project's documents in the background (`settle()` waits)."""

        def convert() -> None:
            try:
                # The turn just flushed: convert what the index holds, and never log changes
                # from a background thread while the caller goes on editing files.
                self.materialize(project, flush=False)
            except FreshlineError:
                # The project left the config, or the config broke, after the turn: there
                # is nothing to convert now, and the next turn reports what is wrong.
                pass

        thread = threading.Thread(target=convert, daemon=True)
        thread.start()
        self._background.append(thread)

    def settle(self) -> None:
        """Wait for background conversions to finish."""
        while self._background:
            self._background.pop().join()


