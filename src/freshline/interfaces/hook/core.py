"""The hook's whole behaviour as one in-process call, the same for every agent.

    answer(adapter, payload, options, warm) -> Answer(text, follow_ups)

`adapter` translates one agent's protocol (`protocol.py`, `claude_code.py`); this module
does the rest with the session layer's delivery engine (`session/engine.py`):

- nothing at all inside an agent another channel runs (`options.owner`: the ACP proxy
  marks the agent it starts): one owner per conversation;
- pins the agent's session to a project at its first call: `--project`, else the project
  of the client's project folder, else of the first `cwd`; later calls use the pinned
  session whatever the `cwd` (the agent's `cd` moves it). The workspace is `--workspace`,
  else the one holding the project folder or the `cwd`;
- START and PROMPT: first settles what was printed before from the client's transcript
  (found: acknowledged; dropped: told again; in flight: built upon), then answers with the
  pending blocks, fitted to the `hook` budget and the client's output limit. A PROMPT is
  first recorded as a checkpoint (`session/checkpoints.py`: the project's files as it
  found them; its turn begins; its files are written once the answer is out,
  `Warm.defer`), and the rewinds recorded since the previous one are told with it. A
  START after a compact or clear (or a COMPACT) delivers the manifest again (the agent
  lost it; after a compaction the last block's changes come again too); a closed session
  reopens as it was (the resumed conversation still holds what it was told);
- STOP ends the prompt's turn; END ends it, settles and closes the session;
- TOOL: a shell's start notes where the project stands (its window opens); a tool's end
  settles, then feeds the read ledger with what changed while a shell ran, or the files
  the tool read or wrote (their content now). Prints nothing.

The common session start, with nothing to deliver, is answered without a session manager
(`session.due.nothing_due`, after the one flush the call makes: a delivery after it
flushes no second time), and a TOOL call with nothing outstanding, or a STOP, records
with the tracker's store alone (`session.tooluse.quick_session`).

`answer` keeps no state of its own: `Warm` holds the trackers and session managers of the
workspaces it answered for, so a long-lived caller (the watcher, serving every hook event
over its socket) answers again and again warm, and the hook process makes one per call.
What should happen once the answer is out (start the workspace's watcher, convert the
project's documents) comes back as `follow_ups`, for the caller to run its own way
(`process.py` spawns them).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from freshline import killpoint
from freshline.config import load_config
from freshline.interfaces.hook.protocol import Adapter, Call, HookOptions, Lost, Phase, ToolUse
from freshline.session.due import nothing_due
from freshline.session.evidence import Moment, Witness
from freshline.session.pinning import pinned_project, workspace_for
from freshline.session.tooluse import quick_session, record_tool_use
from freshline.store import SessionState
from freshline.store.sessions import session_title
from freshline.tracker import Tracker

if TYPE_CHECKING:  # the session manager loads only when a call gets that far
    from collections.abc import Callable

    from freshline.session import SessionManager
    from freshline.store import SessionRecord


class Follow(StrEnum):
    """What a caller should do once the answer is out."""

    WATCH = "watch"  # start the workspace's watcher unless one runs (its next call is warm)
    CONVERT = "convert"  # convert the project's documents (the blocks said "converting")


@dataclass(frozen=True)
class FollowUp:
    """One thing to do after answering, for a workspace (and a project)."""

    kind: Follow
    root: Path
    project: str | None = None


@dataclass(frozen=True)
class Answer:
    """What the hook prints ("" for nothing), and what to do once it is printed."""

    text: str = ""
    follow_ups: tuple[FollowUp, ...] = ()


class Warm:
    """What answering keeps between calls, per workspace: a tracker for the quick answers,
    once a call needs one a session manager, and the work an answer left for after it (a
    prompt's checkpoint to write). Calls for one workspace take turns."""

    def __init__(self) -> None:
        self._trackers: dict[Path, Tracker] = {}
        self._managers: dict[Path, SessionManager] = {}
        self._locks: dict[Path, threading.Lock] = {}
        self._later: dict[Path, list[Callable[[], object]]] = {}
        self._guard = threading.Lock()

    def lock(self, root: Path) -> threading.Lock:
        """The lock that serializes calls for the workspace at `root`."""
        with self._guard:
            return self._locks.setdefault(root, threading.Lock())

    def tracker(self, root: Path) -> Tracker:
        """The workspace's tracker, its config re-read when freshline.toml changed."""
        tracker = self._trackers.get(root)
        if tracker is None:
            tracker = self._trackers[root] = Tracker(load_config(root))
        tracker.reload_config()
        return tracker

    def manager(self, root: Path) -> SessionManager:
        """The workspace's session manager, made on first use."""
        manager = self._managers.get(root)
        if manager is None:
            from freshline.session import SessionManager

            manager = self._managers[root] = SessionManager(load_config(root))
        return manager

    def defer(self, root: Path, work: Callable[[], object]) -> None:
        """Leave `work` for once the answer is out: `catch_up`, or the workspace's next
        call, whichever comes first."""
        self._later.setdefault(root, []).append(work)

    def pending(self, root: Path) -> bool:
        """Whether work is left for the workspace at `root`."""
        return bool(self._later.get(root))

    def catch_up(self, root: Path) -> None:
        """Do the work the workspace's answers left (in turn with its calls)."""
        with self.lock(root):
            self._catch_up(root)

    def _catch_up(self, root: Path) -> None:
        """`catch_up`, the workspace's lock held."""
        work = self._later.pop(root, [])
        if work:
            killpoint.checkpoint("hook:answered")
        for step in work:
            step()

    def forget(self, root: Path) -> None:
        """Close and drop what is kept for the workspace at `root` (let go: its folder
        may be deleted, and another workspace made at that path)."""
        self.catch_up(root)
        manager = self._managers.pop(root, None)
        if manager is not None:
            manager.close()
        tracker = self._trackers.pop(root, None)
        if tracker is not None:
            tracker.store.close()

    def close(self) -> None:
        """Do the work answers left, wait for background work, and close the session
        managers and stores."""
        for root in list(self._later):
            self.catch_up(root)
        for manager in self._managers.values():
            manager.close()
        for tracker in self._trackers.values():
            tracker.store.close()
        self._managers.clear()
        self._trackers.clear()


def answer(adapter: Adapter, payload: str, options: HookOptions, warm: Warm) -> Answer:
    """The hook's answer to one call of `adapter`'s client (UsageError and kin for a
    payload it cannot read or a place outside every workspace or project)."""
    call = adapter.parse(payload)
    if options.owner is not None:
        return Answer()  # another channel delivers to this agent's conversation
    root = workspace_for(options.starts(call), options.workspace)
    with warm.lock(root):
        warm._catch_up(root)  # a checkpoint an earlier answer left: before this call looks
        if call.moment is Moment.TOOL:
            return _tool(adapter, call, options, warm, root)
        if call.moment is Moment.STOP:
            return _stop(adapter, call, warm.tracker(root))
        answered = _deliver(adapter, call, options, warm, root)
        if call.prompt is not None:
            _name(warm.tracker(root), adapter.external_id(call.agent_session), call.prompt)
        return answered


def _name(tracker: Tracker, external: str, prompt: str) -> None:
    """Title the agent's session with its first prompt (`session list` shows it), as a
    chat's first message titles a chat's; a session that has one keeps it."""
    title = session_title(prompt)
    if title is not None:
        tracker.store.session_name(external, title)


def _deliver(
    adapter: Adapter, call: Call, options: HookOptions, warm: Warm, root: Path
) -> Answer:
    external = adapter.external_id(call.agent_session)
    delivering = call.moment in (Moment.START, Moment.PROMPT)
    # Only once answered: a watcher starting beside this call would walk and hash the
    # workspace at the same time as its flush (a first call's full scan).
    watch = (FollowUp(Follow.WATCH, root),) if delivering else ()
    looked = _looked(adapter, call, warm.tracker(root))
    if looked is None:
        return Answer("", watch)
    from freshline.context import Channel, Meter
    from freshline.session.checkpoints import checkpoint, end_turn
    from freshline.session.engine import Deliveries

    manager = warm.manager(root)
    if call.moment in (Moment.END, Moment.COMPACT) and manager.by_external(external) is None:
        return Answer()  # a session freshline never served ended (or compacts)
    engine = Deliveries(manager)
    s, opened = _pin(adapter, call, options, manager, external)
    witness = _witness(adapter, call)
    if call.lost is not None:
        s = engine.lost_context(s.id, compacted=call.lost is Lost.COMPACTED)
    elif call.moment is not Moment.COMPACT:
        engine.settle(s.id, witness)
    if call.moment is Moment.END:
        end_turn(manager.store, s.id)
        manager.close_session(s.id)
        return Answer()
    if call.moment is Moment.COMPACT:
        return Answer()  # the next prompt brings the manifest and the changes again
    if s.state is SessionState.CLOSED:
        s = manager.reopen(s.id)
    taken = None
    if call.moment is Moment.PROMPT:
        taken = checkpoint(manager, s.id, call.prompt or "")
        warm.defer(root, taken.done)  # its files are written once the answer is out
    meter = Meter.around(adapter.output(call, ""), adapter.encoding)
    issued = engine.issue(s.id, Channel.HOOK, meter, adapter.output_limit, witness,
                          flush=not (opened or looked) and taken is None,
                          rewinds=taken.rewinds if taken else ())
    if issued is None:
        return Answer("", watch)
    convert = (FollowUp(Follow.CONVERT, root, s.project),) if issued.converting else ()
    return Answer(adapter.output(call, issued.blocks), watch + convert)


def _looked(adapter: Adapter, call: Call, tracker: Tracker) -> bool | None:
    """None when the agent's session is known, kept its context, and has been told
    everything (`session.due`); else whether this looked, after a flush (the delivery
    then needs no second one). Only for START: a prompt records its checkpoint, END
    closes the session, a tool feeds the ledger and settles what went out."""
    if call.moment is not Moment.START or call.lost_context:
        return False
    external = adapter.external_id(call.agent_session)
    s = tracker.store.session_by_external(external)
    if s is None:
        return False
    tracker.flush()
    return None if nothing_due(s, tracker.epoch(s.project)) else True


def _stop(adapter: Adapter, call: Call, tracker: Tracker) -> Answer:
    """The agent finished answering the prompt: its turn is over (a rewind may run)."""
    from freshline.session.checkpoints import end_turn

    s = tracker.store.session_by_external(adapter.external_id(call.agent_session))
    if s is not None:
        end_turn(tracker.store, s.id)
    return Answer()


def _tool(adapter: Adapter, call: Call, options: HookOptions, warm: Warm, root: Path) -> Answer:
    """A tool starts or ran. A shell's start opens its window; at the end, settle what
    went out (the request that carried it did), then feed the read ledger: with what
    changed while a shell ran, or the files the tool read or wrote. Prints nothing."""
    tool = call.tool
    if tool is None or (tool.window is None and tool.kind is None):
        return Answer()  # a tool the ledger does not follow, or one that named no file
    external = adapter.external_id(call.agent_session)
    tracker = warm.tracker(root)
    if tool.phase is Phase.START:
        s = tracker.store.session_by_external(external)
        if s is not None and tool.window is not None:
            from freshline.session.checkpoints import tool_window

            tool_window(tracker, s, tool.window)
        return Answer()
    quick = quick_session(tracker, external)
    if quick is not None:
        _tool_ran(tracker, quick, call, tool)
        return Answer()  # the common call: nothing outstanding, no session manager
    from freshline.session.engine import Deliveries

    manager = warm.manager(root)
    s, _ = _pin(adapter, call, options, manager, external)
    Deliveries(manager).settle(s.id, _witness(adapter, call))
    _tool_ran(manager.tracker, s, call, tool)
    return Answer()


def _tool_ran(tracker: Tracker, s: SessionRecord, call: Call, tool: ToolUse) -> None:
    """Feed the ledger with what the tool did: all that changed while a shell ran, else
    (or when its start was not seen) the files it named."""
    if tool.window is not None:
        from freshline.session.checkpoints import close_window

        if close_window(tracker, s, tool.window) is not None:
            return
    if tool.kind is not None:
        for path in tool.paths:
            record_tool_use(tracker, s, call.cwd, path, tool.kind)


def _pin(
    adapter: Adapter, call: Call, options: HookOptions, manager: SessionManager, external: str
) -> tuple[SessionRecord, bool]:
    """The freshline session of the agent's, and whether this call opened it (live, its
    conversation opened by its first prompt's checkpoint, its documents converted in the
    background)."""
    s = manager.by_external(external)
    if s is not None:
        return s, False
    from freshline.context import Channel

    project = pinned_project(manager.reload_config(), options.starts(call), options.project)
    opened = manager.new(
        project, mode="live", external_id=external, convert=False, channel=Channel.HOOK
    )
    return opened, True


def _witness(adapter: Adapter, call: Call) -> Witness:
    """The call's view of its client's transcript."""
    return Witness(call.transcript, adapter.transcript, call.moment)

