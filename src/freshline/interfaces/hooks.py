"""`freshline hook claude-code`: tell Claude Code what changed, on every prompt.

Claude Code runs the hook with one JSON object on stdin (`hook_event_name`, `session_id`,
`cwd`, and `prompt` or `source`). The hook finds the workspace from `cwd`, picks the
project that holds `cwd` (`project_for`), maps Claude's session id to a freshline session
(created on first use), and prints the pending blocks as
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`. Printing the
output is the delivery: the turn is accepted right after it is written.

Nothing to tell → no output. The hook never blocks a prompt on its own failure: it exits
0 with no output and appends one line to the hook log (`hook_log_path`).

A `PostToolUse` payload (Claude's `Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`)
only feeds the session's read ledger (`record_tool_use`, `hook_ledger.py`) and prints
nothing: Claude's own writes are then not announced back, and files it read that change
later open the next prompt's updates.

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
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from freshline.access import AccessDenied, Rules, reach
from freshline.config import Config, find_workspace, load_config
from freshline.errors import NotFoundError, UsageError
from freshline.interfaces.hook_ledger import ToolUse, tool_use
from freshline.paths import shown
from freshline.scope import Pattern, PatternKind
from freshline.store import SessionRecord, SessionState, Store
from freshline.tracker.autowatch import ensure as ensure_watcher
from freshline.tracker.hashing import blob_of

if TYPE_CHECKING:  # the context and session layers load only when there is something to say
    from freshline.context import Meter
    from freshline.session import PreparedTurn, SessionManager

LOG_ENV = "FRESHLINE_HOOK_LOG"
AGENT = "claude-code"
CONVERT = "convert"  # `python -m freshline.interfaces.hooks convert ROOT PROJECT`


class HookEvent(StrEnum):
    """The Claude Code hook events freshline answers."""

    SESSION_START = "SessionStart"  # a session starts, resumes, or was cleared/compacted
    USER_PROMPT_SUBMIT = "UserPromptSubmit"  # the user sent a prompt
    POST_TOOL_USE = "PostToolUse"  # a tool ran: reads and writes feed the read ledger


# SessionStart sources after which the agent no longer holds the manifest.
_CONTEXT_LOST = frozenset({"clear", "compact"})


@dataclass(frozen=True)
class HookInput:
    """The fields of Claude Code's hook payload that freshline uses."""

    event: HookEvent
    session_id: str
    cwd: Path
    source: str | None = None  # SessionStart only: startup, resume, clear or compact
    tool: ToolUse | None = None  # PostToolUse only: the tool that ran, on which file


def parse_payload(text: str) -> HookInput:
    """Read the hook's JSON payload; raises UsageError when it is not one freshline reads."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"hook payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError("hook payload is not a JSON object")
    try:
        event = HookEvent(str(data.get("hook_event_name")))
    except ValueError:
        raise UsageError(f"unsupported hook event {data.get('hook_event_name')!r}") from None
    session_id, cwd = data.get("session_id"), data.get("cwd")
    if not isinstance(session_id, str) or not session_id:
        raise UsageError("hook payload has no session_id")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise UsageError("hook payload has no absolute cwd")
    source = data.get("source")
    tool = tool_use(data) if event is HookEvent.POST_TOOL_USE else None
    return HookInput(
        event, session_id, Path(cwd), source if isinstance(source, str) else None, tool
    )


def blocks_of(turn: PreparedTurn) -> str | None:
    """The manifest and updates blocks of a prepared turn (its message left out)."""
    parts = [b for b in (turn.manifest, turn.updates) if b]
    return "\n\n".join(parts) if parts else None


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


# --- which project holds the working directory ------------------------------------------


def _base(pattern: Pattern) -> str:
    """The folder a pattern's files must be under (`""`: anywhere in the workspace)."""
    if pattern.kind is PatternKind.FOLDER:
        return pattern.value
    if pattern.kind is PatternKind.GLOB:
        fixed = []
        for segment in pattern.value.split("/"):
            if any(ch in segment for ch in "*?["):
                break
            fixed.append(segment)
        return "/".join(fixed)
    return ""


def _within(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


def project_for(config: Config, rel: str) -> str:
    """The project for a working directory at workspace-relative `rel` (`""`: the root).

    1. The project with the deepest folder include (or glob's fixed folder) holding `rel`.
    2. Else the first project, in config order, whose files may lie under `rel`: a folder
       include below it, or a pattern that matches anywhere (extension, tag, note, property).
    3. Else none: NotFoundError.
    """
    best: tuple[int, str] | None = None
    for name, project in config.projects.items():
        for pattern in project.scope.include:
            base = _base(pattern)
            depth = base.count("/") + 1
            if base and _within(rel, base) and (best is None or depth > best[0]):
                best = (depth, name)
    if best is not None:
        return best[1]
    for name, project in config.projects.items():
        if any(not _base(p) or _within(_base(p), rel) for p in project.scope.include):
            return name
    where = rel or "the workspace root"
    raise NotFoundError(shown(f"{where} is outside every project of {config.root}"))


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


def _session(manager: SessionManager, payload: HookInput, project: str) -> SessionRecord:
    """The freshline session mapped to Claude's session (created on first use)."""
    external = f"{AGENT}:{project}:{payload.session_id}"
    s = manager.store.session_by_external(external)
    if s is None:
        # Live whatever the project's mode: the agent works in the checkout itself.
        return manager.new(project, mode="live", external_id=external, convert=False)
    lost = payload.event is HookEvent.SESSION_START and payload.source in _CONTEXT_LOST
    if lost or s.state is SessionState.CLOSED:
        # The agent lost its context (cleared, compacted) or the session was closed:
        # resuming rebuilds the manifest and delivers it again.
        return manager.resume(s.id, convert=False)
    return s


def deliver(payload: HookInput, out: TextIO) -> bool:
    """Write the pending blocks as hook output and accept them; False when nothing changed."""
    root = find_workspace(payload.cwd)
    config = load_config(root)
    if nothing_due_for(config, payload):
        return False
    project = _project(config, payload)
    from freshline.context import Channel
    from freshline.session import SessionManager

    manager = SessionManager(config)
    try:
        s = _session(manager, payload, project)
        turn = manager.prepare(
            s.id, "", conversation=False, channel=Channel.HOOK, meter=hook_meter(payload.event)
        )
        blocks = blocks_of(turn)
        if blocks is None:
            _pass_over(turn)
            return False
        out.write(hook_output(payload.event, blocks))
        out.flush()
        turn.accept()
        if turn.staged.pending:
            _convert_in_background(root, project)
        return True
    finally:
        manager.close()


def _pass_over(turn: PreparedTurn) -> None:
    """Move the cursor over epochs that had nothing to tell (Claude's own writes, say), so
    the next prompt does not weigh them again. Nothing was delivered: no turn is counted."""
    if turn.covers != turn.session.cursor:
        turn.accept()


def record_tool_use(payload: HookInput) -> bool:
    """Feed the read ledger from a PostToolUse payload: what Claude's `Read` showed, or
    what its `Write`, `Edit`, `MultiEdit` or `NotebookEdit` wrote (the file's content now,
    as a git blob id). Prints nothing. False when there was nothing to record: another
    tool, a file outside the workspace, a secret, an internal or ignored file."""
    from freshline.session import SessionManager
    from freshline.session.ledger import Ledger
    from freshline.session.rules import workspace_rules

    tool = payload.tool
    if tool is None or tool.kind is None:
        return False  # another tool, or one that named no file
    config = load_config(find_workspace(payload.cwd))
    project = _project(config, payload)
    try:
        target = reach(
            config.root, str(payload.cwd / tool.path), workspace_rules(config, project)
        )
    except AccessDenied:
        return False
    blob = blob_of(target.path)
    if blob is None:
        return False
    store = Store(config.data_dir)  # the common case needs no session manager
    try:
        s = store.session_by_external(f"{AGENT}:{project}:{payload.session_id}")
        if s is None:
            manager = SessionManager(config)
            try:
                s = _session(manager, payload, project)
            finally:
                manager.close()
        Ledger(store).record(s.id, target.rel, blob, tool.kind)
    finally:
        store.close()
    return True


def _project(config: Config, payload: HookInput) -> str:
    # Resolved and checked like any path read for an agent: never inside .git/ or a secret.
    here = reach(config.root, str(payload.cwd), Rules(ignore=config.workspace.ignore))
    return project_for(config, here.rel)


def nothing_due_for(config: Config, payload: HookInput) -> bool:
    """The common prompt, answered without loading the session layer: Claude's session is
    known, kept its context, and has been told everything (see `session.due`)."""
    from freshline.session.due import nothing_due
    from freshline.tracker import Tracker

    project = _project(config, payload)
    tracker = Tracker(config)
    ensure_watcher(config, tracker.store)
    tracker.flush()
    s = tracker.store.session_by_external(f"{AGENT}:{project}:{payload.session_id}")
    lost = payload.event is HookEvent.SESSION_START and payload.source in _CONTEXT_LOST
    return s is not None and not lost and nothing_due(s, tracker.epoch(project))


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


def run_claude_code(stdin: TextIO, out: TextIO) -> int:
    """The whole hook: always 0; failures are logged, never printed."""
    try:
        payload = parse_payload(stdin.read())
        if payload.event is HookEvent.POST_TOOL_USE:
            record_tool_use(payload)
        else:
            deliver(payload, out)
    except Exception as exc:  # the hook must never break the prompt
        _log(f"{type(exc).__name__}: {exc}")
    return 0


def claude_code_hook() -> int:
    """Claude Code hook: print what changed in the project as additional context.

    Example: in .claude/settings.json, run `freshline hook claude-code` on UserPromptSubmit.
    """
    return run_claude_code(sys.stdin, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1:2] == [CONVERT]:
        convert(Path(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(claude_code_hook())
