"""The hook adapter contract: one agent's hook protocol, in the engine's terms.

A hook adapter (one module per agent; `claude_code.py` is the first) translates its
client's protocol and nothing more:

    name            the CLI's `freshline hook <name>`, and the prefix of the external ids
                    of its sessions (`<name>:<the agent's session id>`)
    parse           its stdin payload → a `Call`: its event mapped to an engine `Moment`
                    (START, PROMPT, TOOL, END), the agent's session, working directory,
                    transcript, and for a tool the file it read or wrote
    output          the blocks → the text its client reads from the hook's stdout
    encoding        how that text carries the blocks (the budget counts it so)
    output_limit    the most characters its client shows the model whole
    transcript      the format its transcript records hook context in
                    (`session/transcripts/`; None: nothing to read, printed = delivered)
    project_dir_env its client's own project folder variable, if it sets one
    settings, events, matchers, entry   where `hook install` registers it, for which
                    events (and tools), with which fields beside the command (a name,
                    a timeout in the client's unit)
    how_to_trust    what a person must still do before the client runs the hook, if any

Everything else (which workspace and project, whether anything is due, settling what was
printed, issuing, the read ledger, conversions) is the shared core's (`core.py`) over the
session layer's engine, the same for every agent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from freshline.context import Encoding
from freshline.session.evidence import Moment, TranscriptFormat
from freshline.session.owners import owned_by
from freshline.store import LedgerKind


@dataclass(frozen=True)
class ToolUse:
    """A tool the agent ran, and the file it named."""

    path: str  # as given: absolute, or relative to the call's cwd ("" when it named none)
    kind: LedgerKind | None  # what it did to the file; None: not a tool the ledger follows,
    #                         one that named no file, or one that failed


@dataclass(frozen=True)
class Call:
    """One hook call, in the engine's terms."""

    event: str  # the client's own name for it (its output names it back)
    moment: Moment
    agent_session: str  # the client's session id
    cwd: Path  # the agent's working directory now (it may have `cd`'d anywhere)
    transcript: Path | None = None  # the client's transcript, if the payload names one
    lost_context: bool = False  # a START after the agent compacted or cleared its context
    tool: ToolUse | None = None  # a TOOL call's tool
    prompt: str | None = None  # a PROMPT call's message: the session's title, if it has none


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
    how_to_trust: str | None = None  # `{settings}`, `{root}`: the installed file, workspace

    def external_id(self, agent_session: str) -> str:
        """The external id of the freshline session bound to one of the agent's."""
        return f"{self.name}:{agent_session}"


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
