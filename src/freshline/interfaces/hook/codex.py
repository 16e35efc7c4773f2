"""Codex CLI's hooks (0.171), translated for the engine.

Codex runs hooks from `~/.codex/hooks.json` or `<project>/.codex/hooks.json` with Claude
Code's payload and output shapes (`payload.py`); timeouts are in seconds. Each hook's
additional context reaches the model as a `developer` message of its own. It runs only
hooks a person trusted (per hook, by the hash of its entry: `/hooks` in the Codex TUI),
and a project's hooks only in a trusted project (`[projects."<path>"] trust_level =
"trusted"` in `~/.codex/config.toml`); untrusted hooks silently do not run. Its transcript
is read with `session.transcripts.codex.CODEX`; it sets no project folder variable.

Output limit: context over 2,500 tokens, counted as 4 bytes each (9,017 bytes arrived
whole, 10,017 did not), is replaced by a head-and-tail excerpt the transcript marks as
truncated. 9,000 characters counted as ASCII-only JSON are never more bytes than that.

Codex reports its shell (`exec_command`) to hooks as `Bash`, and `apply_patch` as
itself, each with a `tool_use_id` on both PreToolUse and PostToolUse: what changed in the
project between the two is the tool's write (every file of a multi-file patch, those it
deletes or moves too). A patch whose start was not seen counts the files it names.
`Stop` ends the prompt's turn. Codex clamps a SessionEnd hook's timeout to 3 seconds (and
warns, an error item under `exec --json`): the entry asks for no more.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from freshline.context import Encoding
from freshline.interfaces.hook import payload
from freshline.interfaces.hook.protocol import Adapter, Call, Lost, ToolUse
from freshline.session.evidence import Moment, texts
from freshline.session.transcripts.codex import CODEX
from freshline.store import LedgerKind

EVENTS = {
    "SessionStart": Moment.START,  # a session starts or resumes
    "UserPromptSubmit": Moment.PROMPT,  # the user sent a prompt: its checkpoint
    "PreToolUse": Moment.TOOL,  # a shell or a patch starts (its window opens)
    "PostToolUse": Moment.TOOL,  # a tool ran (the files it wrote: the read ledger)
    "Stop": Moment.STOP,  # the answer to the prompt is done: its turn ends
    "SessionEnd": Moment.END,  # the thread ended: freshline's session closes
}
TOOL_START = "PreToolUse"
CONTEXT_LOST = {"clear": Lost.CLEARED, "compact": Lost.COMPACTED}  # SessionStart sources
# apply_patch's file headers: added, updated, deleted, and where an update moves a file.
PATCHED = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+)$", re.M)
SHELLS = frozenset({"Bash", "apply_patch"})  # what changed while they ran is theirs
MATCHER = "|".join(sorted(SHELLS))  # the only tools freshline follows in Codex
END_TIMEOUT_S = 3  # Codex's most for a SessionEnd hook
REWIND = ("Codex keeps this conversation's transcript: press Esc twice in Codex to go back "
          "to an earlier message")
TRUST = ("Codex runs only hooks you trust: open `codex` in {root} and trust freshline's "
         "hooks with /hooks (project hooks also need the project trusted: "
         "[projects.\"{root}\"] trust_level = \"trusted\" in ~/.codex/config.toml)")


def parse(text: str) -> Call:
    """Read the hook's JSON payload; UsageError when it is not one freshline reads."""
    return payload.parse(text, EVENTS, tool_use, CONTEXT_LOST, {TOOL_START})


def tool_use(data: dict[str, Any]) -> ToolUse:
    """The tool of a PreToolUse or PostToolUse payload: a shell's window, or a patch's
    window and every file it names; UsageError when it names no tool."""
    name, fields, failed = payload.tool_fields(data)
    if name not in SHELLS:
        return ToolUse((), None)
    found = tuple(dict.fromkeys(m.group(1).strip() for t in texts(fields)
                                for m in PATCHED.finditer(t)))
    kind = LedgerKind.WRITE if found and not failed else None
    return ToolUse(found, kind, window=payload.call_key(data))


ADAPTER = Adapter(
    name="codex",
    parse=parse,
    output=payload.output,
    encoding=Encoding.JSON_ASCII,
    output_limit=9_000,
    transcript=CODEX,
    project_dir_env=None,
    settings=Path(".codex") / "hooks.json",
    events=tuple(EVENTS),
    matchers={"PreToolUse": MATCHER, "PostToolUse": MATCHER},
    entry={"timeout": 60},
    entries={"SessionEnd": {"timeout": END_TIMEOUT_S}},
    how_to_trust=TRUST,
    rewind_hint=REWIND,
)
