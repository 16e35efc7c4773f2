"""`freshline hook claude-code`: tell Claude Code what changed, proven delivered.

Claude Code runs the hook with one JSON object on stdin (`hook_event_name`, `session_id`,
`transcript_path`, `cwd`, and per event `source`, `prompt`, `tool_name`, …). The hook

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
  writes a tree of the project.

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
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from freshline.config import load_config
from freshline.context import Channel, Encoding, Meter
from freshline.errors import UsageError
from freshline.interfaces.hook_pinning import pinned_project, workspace_for
from freshline.interfaces.transcript import Verdict, read_evidence, size_of, stage, verdict
from freshline.store import Acknowledgement, DeliveryRecord, SessionRecord, SessionState

if TYPE_CHECKING:  # the session layer loads only when a call gets that far
    from freshline.session import SessionManager

LOG_ENV = "FRESHLINE_HOOK_LOG"
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
AGENT = "claude-code"
CONVERT = "convert"  # `python -m freshline.interfaces.hooks convert ROOT PROJECT`
NO_TRANSCRIPT = "the hook's payload names no transcript: acknowledged when printed"


class HookEvent(StrEnum):
    """The Claude Code hook events freshline answers."""

    SESSION_START = "SessionStart"  # a session starts, resumes, or was cleared/compacted
    USER_PROMPT_SUBMIT = "UserPromptSubmit"  # the user sent a prompt
    POST_TOOL_USE = "PostToolUse"  # a tool ran (what it read and wrote: the read ledger)
    SESSION_END = "SessionEnd"  # the session ended: freshline's session closes


# The events whose output Claude Code gives the model as context before a request.
_DELIVERING = frozenset({HookEvent.SESSION_START, HookEvent.USER_PROMPT_SUBMIT})
# SessionStart sources after which the agent no longer holds the manifest.
_CONTEXT_LOST = frozenset({"clear", "compact"})


@dataclass(frozen=True)
class HookInput:
    """The fields of Claude Code's hook payload that freshline uses."""

    event: HookEvent
    session_id: str
    cwd: Path
    source: str | None = None  # SessionStart only: startup, resume, clear or compact
    transcript: Path | None = None  # the session's transcript (JSON lines), if named
    tool_name: str | None = None  # PostToolUse: the tool that ran
    tool_input: dict[str, Any] = field(default_factory=dict)  # PostToolUse: its input
    tool_response: Any = None  # PostToolUse: what it returned


@dataclass(frozen=True)
class HookOptions:
    """How the hook was set up: `--workspace`, `--project`, `$CLAUDE_PROJECT_DIR`."""

    workspace: Path | None = None
    project: str | None = None
    project_dir: Path | None = None

    @classmethod
    def from_env(cls, workspace: Path | None = None, project: str | None = None) -> HookOptions:
        """The options given, with Claude's project folder from the environment."""
        folder = os.environ.get(PROJECT_DIR_ENV)
        return cls(workspace, project, Path(folder) if folder and os.path.isabs(folder) else None)


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
    transcript = data.get("transcript_path")
    tool_input = data.get("tool_input")
    return HookInput(
        event,
        session_id,
        Path(cwd),
        _text(data.get("source")),
        Path(transcript) if isinstance(transcript, str) and os.path.isabs(transcript) else None,
        _text(data.get("tool_name")),
        tool_input if isinstance(tool_input, dict) else {},
        data.get("tool_response"),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def hook_output(event: HookEvent, blocks: str) -> str:
    """The line the hook prints: Claude Code's JSON with the blocks as additional context
    (ASCII-only JSON, so no locale can garble it)."""
    output = {"hookSpecificOutput": {"hookEventName": event.value, "additionalContext": blocks}}
    return json.dumps(output) + "\n"


def hook_meter(event: HookEvent) -> Meter:
    """How the hook's stdout counts the blocks: the JSON around them, then the blocks as
    an ASCII JSON string."""
    return Meter.around(hook_output(event, ""), Encoding.JSON_ASCII)


def external_id(claude_session: str) -> str:
    """The external id of the freshline session pinned to a Claude Code session."""
    return f"{AGENT}:{claude_session}"


# --- where the session is ---------------------------------------------------------------


def _starts(payload: HookInput, options: HookOptions) -> list[Path]:
    """Where to look for the workspace and the project, most stable first: Claude's
    project folder does not follow the agent's `cd`."""
    return [p for p in (options.project_dir, payload.cwd) if p is not None]


def pin(
    manager: SessionManager, payload: HookInput, options: HookOptions
) -> tuple[SessionRecord, bool]:
    """The freshline session of Claude's session, and whether this call opened it (live,
    with no conversation, its documents converted in the background)."""
    external = external_id(payload.session_id)
    s = manager.store.session_by_external(external)
    if s is not None:
        return s, False
    project = pinned_project(manager.config, _starts(payload, options), options.project)
    opened = manager.new(
        project, mode="live", external_id=external, convert=False, conversation=False
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
    """Answer one hook call: settle earlier deliveries, then (on SessionStart and
    UserPromptSubmit) write the pending blocks as hook output; False when nothing was
    written."""
    from freshline.session import SessionManager

    options = options or HookOptions()
    root = workspace_for(_starts(payload, options), options.workspace)
    manager = SessionManager(load_config(root))
    try:
        s, opened = pin(manager, payload, options)
        if payload.event is HookEvent.SESSION_START and payload.source in _CONTEXT_LOST:
            from freshline.session import tokens

            # The agent lost its context: whatever it was handed is gone with it.
            tokens.supersede(manager, s.id)
            s, chain = manager.resume(s.id, convert=False, closed=False), []
        else:
            chain = settle(manager, s, payload)
        if payload.event is HookEvent.SESSION_END:
            manager.close_session(s.id)
            return False
        if payload.event not in _DELIVERING:
            return False  # PostToolUse: what the tool read and wrote is the ledger's
        if s.state is SessionState.CLOSED:
            s = manager.reopen(s.id)
        return _print(manager, s, payload, chain, out, flush=not opened)
    finally:
        manager.close()


def _print(
    manager: SessionManager,
    s: SessionRecord,
    payload: HookInput,
    chain: list[DeliveryRecord],
    out: TextIO,
    flush: bool,
) -> bool:
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
        deliver(parse_payload(stdin.read()), out, options)
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
