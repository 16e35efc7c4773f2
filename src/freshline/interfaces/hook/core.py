"""`freshline hook claude-code`: tell Claude Code what changed, proven delivered.

Claude Code runs the hook with one JSON object on stdin (`hook_event_name`, `session_id`,
`transcript_path`, `cwd`, and per event `source`, `prompt`, `tool_name`, …; read by
`hook_payload.py`). The hook

- pins the project per Claude session at its first call: `--project`, else the project
  of `$CLAUDE_PROJECT_DIR` (Claude's own project folder), else of the first `cwd`. Later
  calls of that session use the pinned freshline session whatever the `cwd` (the agent's
  `cd` in Bash moves it). The workspace is `--workspace`, else the one holding
  `$CLAUDE_PROJECT_DIR` or the `cwd`.
- on SessionStart and UserPromptSubmit prints the pending blocks as
  `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`, each block
  carrying a delivery token in its opening tag (`session/tokens.py`);
- on every call first decides the deliveries still outstanding from the transcript
  (`transcript.py`): found ones are acknowledged, dropped ones are told again with their
  epochs, ones still in flight are built upon. Without a transcript in the payload the
  blocks are acknowledged when printed, and `session show` says so;
- SessionStart with source `compact` or `clear` delivers the manifest again (the agent
  lost it), without the "closed for a while" note; `resume` reopens the session as it
  was (the resumed conversation still holds what it was told); SessionEnd closes it;
- records no conversation: a hook session has no turn of its own to record, so it never
  writes a tree of the project;
- on PostToolUse (Claude's `Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`) feeds the
  session's read ledger (`record_tool_use`, `hook_ledger.py`) and prints nothing: Claude's
  own writes are then not announced back, and files it read that change later open the
  next prompt's updates.

The common prompt, with nothing to deliver, is answered before the session layer loads
(`nothing_due_for`; by the running watcher over its socket when there is one,
`watchsock.py`). SessionEnd and PostToolUse never take that path: one closes the session,
the other feeds the ledger and settles what went out.

Nothing to tell → no output. The hook never blocks a prompt on its own failure: it exits
0 with no output and appends one line to the hook log (`hook_log_path`).

Claude Code shows hook output whole only up to 10,000 characters (past that the model sees
a 2 KB preview, without the closing tag), so the blocks are fitted to the `hook` budget
(`[delivery]`, 9,000 by default) as measured on the hook's stdout: the JSON line printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from freshline.access import AccessDenied, reach
from freshline.config import Config, load_config
from freshline.interfaces.hook_payload import (
    AGENT,
    CONTEXT_LOST,
    DELIVERING,
    HookEvent,
    HookInput,
    HookOptions,
    external_id,
    parse_payload,
    starts,
)
from freshline.interfaces.hook_pinning import pinned_project, workspace_for
from freshline.interfaces.transcript import Verdict, read_evidence, size_of, stage, verdict
from freshline.store import (
    Acknowledgement,
    DeliveryRecord,
    DeliveryState,
    SessionRecord,
    SessionState,
    Store,
)
from freshline.tracker.autowatch import ensure as ensure_watcher
from freshline.tracker.hashing import blob_of

if TYPE_CHECKING:  # the context and session layers load only when a call gets that far
    from freshline.context import Meter
    from freshline.session import SessionManager

LOG_ENV = "FRESHLINE_HOOK_LOG"
CONVERT = "convert"  # `python -m freshline.interfaces.hooks convert ROOT PROJECT`
NO_TRANSCRIPT = "the hook's payload names no transcript: acknowledged when printed"


def hook_output(event: HookEvent, blocks: str) -> str:
    """The line the hook prints: Claude Code's JSON with the blocks as additional context
    (ASCII-only JSON, so no locale can garble it)."""
    output = {"hookSpecificOutput": {"hookEventName": event.value, "additionalContext": blocks}}
    return json.dumps(output) + "\n"


def hook_meter(event: HookEvent) -> Meter:
    """How the hook's stdout counts the blocks: the JSON around them, then the blocks as
    an ASCII JSON string."""
    from freshline.context import Encoding, Meter

    return Meter.around(hook_output(event, ""), Encoding.JSON_ASCII)


# --- where the session is ---------------------------------------------------------------


def pin(
    manager: SessionManager, payload: HookInput, options: HookOptions
) -> tuple[SessionRecord, bool]:
    """The freshline session of Claude's session, and whether this call opened it (live,
    with no conversation, its documents converted in the background)."""
    external = external_id(payload.session_id)
    s = manager.store.session_by_external(external)
    if s is not None:
        return s, False
    from freshline.context import Channel

    project = pinned_project(manager.config, starts(payload, options), options.project)
    opened = manager.new(
        project, mode="live", external_id=external, convert=False, channel=Channel.HOOK
    )
    return opened, True


# --- what became of the deliveries so far -------------------------------------------------


def settle(manager: SessionManager, s: SessionRecord, payload: HookInput) -> list[DeliveryRecord]:
    """Decide the session's outstanding deliveries (one chain, oldest first) from the
    transcript: acknowledge the ones found, give up from the first missing one on (the
    next delivery tells it all again), and return those still in flight."""
    from freshline.session import tokens

    chain = tokens.outstanding(manager, s.id)
    if not chain:
        return []
    start = min(_offset(d) for d in chain)
    evidence = read_evidence(payload.transcript, start, [d.token for d in chain])
    for i, d in enumerate(chain):
        where = stage(str(d.detail.get("event", "")), bool(d.detail.get("prompted")),
                      payload.event.value)
        fate = verdict(d.token in evidence.found, evidence.answered_after(_offset(d)), where,
                       evidence.readable)
        if fate is Verdict.IN_FLIGHT:
            return _prompted(manager, chain[i:], payload)
        if fate is Verdict.MISSING:
            tokens.supersede(manager, s.id)
            return []
        how, note = Acknowledgement.TRANSCRIPT, None
        if fate is Verdict.UNREADABLE:
            how = Acknowledgement.PRINTED
            note = f"no readable transcript at {payload.transcript}: acknowledged when printed"
        tokens.acknowledge(manager, s.id, d.token, how, note)
    return []


def _offset(d: DeliveryRecord) -> int:
    return int(d.detail.get("offset", 0))


def _prompted(
    manager: SessionManager, chain: list[DeliveryRecord], payload: HookInput
) -> list[DeliveryRecord]:
    """The chain still in flight; on a prompt, each of its deliveries goes out with it."""
    if payload.event is not HookEvent.USER_PROMPT_SUBMIT:
        return chain
    with manager.store.write():
        for d in chain:
            manager.store.delivery_detail(d.token, {**d.detail, "prompted": True})
    return chain


# --- the hook ---------------------------------------------------------------------------


def hook_log_path() -> Path:
    """Where the hook logs its failures: $FRESHLINE_HOOK_LOG, else
    $XDG_CACHE_HOME/freshline/hook.log, else ~/.cache/freshline/hook.log."""
    explicit = os.environ.get(LOG_ENV)
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "freshline" / "hook.log"


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    line = f"{stamp} freshline hook {AGENT}: {' '.join(message.split())}\n"
    try:
        path = hook_log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass  # Nowhere to log; the hook must still never fail the prompt.


def deliver(payload: HookInput, out: TextIO, options: HookOptions | None = None) -> bool:
    """Answer a SessionStart, UserPromptSubmit or SessionEnd call: settle earlier
    deliveries, then (on SessionStart and UserPromptSubmit) write the pending blocks as
    hook output; False when nothing was written."""
    options = options or HookOptions()
    config = load_config(workspace_for(starts(payload, options), options.workspace))
    try:
        if nothing_due_for(config, payload):
            return False
        from freshline.session import SessionManager

        manager = SessionManager(config)
        try:
            s, opened, chain = _open(manager, payload, options)
            if payload.event is HookEvent.SESSION_END:
                manager.close_session(s.id)
                return False
            if payload.event not in DELIVERING:
                return False  # PostToolUse: `record_tool_use` answers it
            if s.state is SessionState.CLOSED:
                s = manager.reopen(s.id)
            return _print(manager, s, payload, chain, out, flush=not opened)
        finally:
            manager.close()
    finally:
        if payload.event in DELIVERING:
            # Only now: a watcher starting beside this call would walk and hash the
            # workspace at the same time as its flush (a first call's full scan).
            ensure_watcher(config, Store(config.data_dir))


def _open(
    manager: SessionManager, payload: HookInput, options: HookOptions
) -> tuple[SessionRecord, bool, list[DeliveryRecord]]:
    """Claude's session pinned (and whether this call opened it), with what became of its
    deliveries so far decided: the chain of them still in flight."""
    s, opened = pin(manager, payload, options)
    if payload.event is HookEvent.SESSION_START and payload.source in CONTEXT_LOST:
        from freshline.session import tokens

        # The agent lost its context: whatever it was handed is gone with it.
        tokens.supersede(manager, s.id)
        return manager.resume(s.id, convert=False, closed=False), opened, []
    return s, opened, settle(manager, s, payload)


def nothing_due_for(config: Config, payload: HookInput) -> bool:
    """The common prompt, answered without loading the session layer: Claude's session
    (found by its external id, wherever the agent's `cd` took the `cwd`) is known, kept its
    context, and has been told everything (see `session.due`). Never for SessionEnd (it
    closes the session) or PostToolUse (it feeds the ledger and settles deliveries)."""
    from freshline.session.due import nothing_due
    from freshline.tracker import Tracker

    lost = payload.event is HookEvent.SESSION_START and payload.source in CONTEXT_LOST
    if payload.event not in DELIVERING or lost:
        return False
    tracker = Tracker(config)
    s = tracker.store.session_by_external(external_id(payload.session_id))
    if s is None:
        return False
    tracker.flush()
    return nothing_due(s, tracker.epoch(s.project))


def record_tool_use(payload: HookInput, options: HookOptions | None = None) -> bool:
    """Feed the read ledger from a PostToolUse payload: what Claude's `Read` showed, or
    what its `Write`, `Edit`, `MultiEdit` or `NotebookEdit` wrote (the file's content now,
    as a git blob id), for the session pinned to Claude's. Deliveries still outstanding are
    settled first (a tool ran: the request that carried them went out). Prints nothing.
    False when there was nothing to record: another tool, a file outside the workspace, a
    secret, an internal or ignored file."""
    options = options or HookOptions()
    config = load_config(workspace_for(starts(payload, options), options.workspace))
    store = Store(config.data_dir, config.store_url, config.store.pool_size)
    try:
        s = store.session_by_external(external_id(payload.session_id))
        if s is not None and not store.deliveries_of(s.id, DeliveryState.OUTSTANDING):
            return _record(config, store, s, payload)  # the common call: no session manager
    finally:
        store.close()
    from freshline.session import SessionManager

    manager = SessionManager(config)
    try:
        s = _open(manager, payload, options)[0]
        return _record(config, manager.store, s, payload)
    finally:
        manager.close()


def _record(config: Config, store: Store, s: SessionRecord, payload: HookInput) -> bool:
    from freshline.session.ledger import Ledger
    from freshline.session.rules import workspace_rules

    tool = payload.tool
    if tool is None or tool.kind is None:
        return False  # another tool, or one that named no file
    try:
        # A relative path is the agent's, from its `cwd` (wherever it `cd`'d to).
        target = reach(
            config.root, str(payload.cwd / tool.path), workspace_rules(config, s.project)
        )
    except AccessDenied:
        return False
    blob = blob_of(target.path)
    if blob is None:
        return False
    Ledger(store).record(s.id, target.rel, blob, tool.kind)
    return True


def _print(
    manager: SessionManager,
    s: SessionRecord,
    payload: HookInput,
    chain: list[DeliveryRecord],
    out: TextIO,
    flush: bool,
) -> bool:
    from freshline.context import Channel
    from freshline.session import tokens

    detail = {
        "event": payload.event.value,
        "transcript": str(payload.transcript) if payload.transcript else None,
        "offset": size_of(payload.transcript),
    }
    issued = tokens.deliver(
        manager, s.id, Channel.HOOK, hook_meter(payload.event), chain, detail, flush
    )
    if issued is None:
        return False
    out.write(hook_output(payload.event, issued.blocks))
    out.flush()
    if payload.transcript is None:
        tokens.acknowledge(manager, s.id, issued.token, Acknowledgement.PRINTED, NO_TRANSCRIPT)
    if issued.turn.staged.pending:
        _convert_in_background(manager.config.root, s.project)
    return True


def _convert_in_background(root: Path, project: str) -> None:
    """Convert the project's documents in a detached process, so the prompt never waits
    (the next prompt announces them as readable). It holds none of Claude's pipes."""
    subprocess.Popen(
        [sys.executable, "-m", "freshline.interfaces.hooks", CONVERT, str(root), project],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def convert(root: Path, project: str) -> None:
    """Convert one project's documents now; failures go to the hook log."""
    try:
        from freshline.session import SessionManager

        manager = SessionManager(load_config(root))
        try:
            manager.materialize(project)
        finally:
            manager.close()
    except Exception as exc:  # a background helper: nobody is there to see it raise
        _log(f"converting {project}: {type(exc).__name__}: {exc}")


def run_claude_code(stdin: TextIO, out: TextIO, options: HookOptions | None = None) -> int:
    """The whole hook: always 0; failures are logged, never printed."""
    try:
        payload = parse_payload(stdin.read())
        if payload.event is HookEvent.POST_TOOL_USE:
            record_tool_use(payload, options)
        else:
            deliver(payload, out, options)
    except Exception as exc:  # the hook must never break the prompt
        _log(f"{type(exc).__name__}: {exc}")
    return 0


def claude_code_hook(workspace: Path | None = None, project: str | None = None) -> int:
    """Claude Code hook: print what changed in the project as additional context.

    Example: `freshline hook install claude-code` writes it into .claude/settings.json.
    """
    return run_claude_code(sys.stdin, sys.stdout, HookOptions.from_env(workspace, project))


if __name__ == "__main__":
    if sys.argv[1:2] == [CONVERT]:
        convert(Path(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(claude_code_hook())
