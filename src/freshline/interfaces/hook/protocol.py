"""The hook adapter contract: one agent's hook protocol, in the engine's terms.

A hook adapter (one module per agent; `claude_code.py` is the first) translates its
client's protocol and nothing more:

    name            the CLI's `freshline hook <name>`, and the prefix of the external ids
                    of its sessions (`<name>:<the agent's session id>`)
    parse           its stdin payload → a `Call`: its event mapped to an engine `Moment`
                    (START, PROMPT, TOOL, STOP, COMPACT, END), the agent's session,
                    working directory, transcript, and for a tool the files it read or
                    wrote, or, for a shell, the window it ran in
    output          the blocks → the text its client reads from the hook's stdout
    encoding        how that text carries the blocks (the budget counts it so)
    output_limit    the most characters its client shows the model whole
    transcript      the format its transcript records hook context in
                    (`session/transcripts/`; None: nothing to read, printed = delivered)
    project_dir_env its client's own project folder variable, if it sets one
    settings, events, matchers, entry   where `hook install` registers it, for which
                    events (and tools), with which fields beside the command (a name,
                    a timeout in the client's unit; `entries` per event where one differs)
    how_to_trust    what a person must still do before the client runs the hook, if any
    rewind_hint     how a person rewinds the agent's own transcript (freshline rewinds
                    only the files: the transcript is the agent's)
    http_events     the events its client can post to a URL (`"type": "http"` hooks) rather
                    than run a command for (with a command beside each post, for when the
                    service is not there); `private_settings` the project's settings
                    file kept out of version control, where entries carrying a secret go

Everything else (which workspace and project, whether anything is due, settling what was
printed, issuing, the read ledger, conversions) is the shared core's (`core.py`) over the
session layer's engine, the same for every agent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from freshline.context import Encoding
from freshline.session.evidence import Moment, TranscriptFormat
from freshline.session.owners import owned_by
from freshline.store import LedgerKind


class Lost(StrEnum):
    """How an agent lost the context it was told (a START after it, or COMPACT)."""

    CLEARED = "cleared"  # a new conversation: the manifest comes again
    COMPACTED = "compacted"  # summarized: the manifest comes again, and what the last
    #                          block told, since the summary may have dropped it


class Phase(StrEnum):
    """Which end of a tool's run a TOOL call is."""

    START = "start"  # it is about to run (PreToolUse, BeforeTool)
    END = "end"  # it ran (PostToolUse, AfterTool)


@dataclass(frozen=True)
class ToolUse:
    """A tool the agent ran, and the files it named."""

    paths: tuple[str, ...]  # as given: absolute, or relative to the call's cwd
    kind: LedgerKind | None  # what it did to them; None: not a tool the ledger follows,
    #                         one that named no file, or one that failed
    window: str | None = None  # a shell's call (its id): what changed while it ran is its
    phase: Phase = Phase.END

    @property
    def path(self) -> str:
        """The first file it named ("" when none)."""
        return self.paths[0] if self.paths else ""


@dataclass(frozen=True)
class Call:
    """One hook call, in the engine's terms."""

    event: str  # the client's own name for it (its output names it back)
    moment: Moment
    agent_session: str  # the client's session id
    cwd: Path  # the agent's working directory now (it may have `cd`'d anywhere)
    transcript: Path | None = None  # the client's transcript, if the payload names one
    lost: Lost | None = None  # a START (or COMPACT) after the agent lost its context
    tool: ToolUse | None = None  # a TOOL call's tool
    prompt: str | None = None  # a PROMPT call's message: its checkpoint's content, and
    #                            the session's title if it has none

    @property
    def lost_context(self) -> bool:
        """Whether the agent compacted or cleared its context."""
        return self.lost is not None


@dataclass(frozen=True)
class Extra:
    """A line `hook install` keeps in a file of the workspace beside the client's settings
    (and `--uninstall` takes out, the file with it when nothing else is left)."""

    file: Path  # relative to the workspace
    line: str


@dataclass(frozen=True)
class Adapter:
    """One agent's hook protocol (see the module docstring)."""

    name: str
    parse: Callable[[str], Call]  # UsageError for a payload it cannot read
    output: Callable[[Call, str], str]
    encoding: Encoding
    output_limit: int
    transcript: TranscriptFormat | None
    project_dir_env: str | None
    settings: Path  # its settings file, relative to the workspace (or the home)
    events: tuple[str, ...]  # the events `hook install` registers the hook for
    matchers: Mapping[str, str] = field(default_factory=dict)  # per event, its tools
    entry: Mapping[str, str | int] = field(default_factory=dict)  # fields of each hook entry
    entries: Mapping[str, Mapping[str, str | int]] = field(default_factory=dict)  # per event
    how_to_trust: str | None = None  # `{settings}`, `{root}`: the installed file, workspace
    rewind_hint: str = "rewind it in the agent itself"
    extras: tuple[Extra, ...] = ()  # lines `hook install` keeps in the workspace's files
    http_events: tuple[str, ...] = ()  # posted to the service rather than run as commands
    private_settings: Path | None = None  # the project's own, out of version control

    def external_id(self, agent_session: str) -> str:
        """The external id of the freshline session bound to one of the agent's."""
        return f"{self.name}:{agent_session}"

    def entry_for(self, event: str) -> Mapping[str, str | int]:
        """The fields beside the command of the hook entry for `event`."""
        return {**self.entry, **self.entries.get(event, {})}


@dataclass(frozen=True)
class HookOptions:
    """How the hook was set up: `--workspace`, `--project`, the client's project folder,
    and the channel that owns the agent it runs in (`owners.OWNER_ENV`), if any."""

    workspace: Path | None = None
    project: str | None = None
    project_dir: Path | None = None
    owner: str | None = None

    @classmethod
    def from_env(
        cls,
        adapter: Adapter,
        workspace: Path | None = None,
        project: str | None = None,
        env: Mapping[str, str] = os.environ,
    ) -> HookOptions:
        """The options given, with the client's project folder and the owner mark read
        from the environment."""
        folder = env.get(adapter.project_dir_env or "")
        project_dir = Path(folder) if folder and os.path.isabs(folder) else None
        return cls(workspace, project, project_dir, owned_by(env))

    def starts(self, call: Call) -> list[Path]:
        """Where to look for the workspace and the project, most stable first: the
        client's project folder does not follow the agent's `cd`."""
        return [p for p in (self.project_dir, call.cwd) if p is not None]
