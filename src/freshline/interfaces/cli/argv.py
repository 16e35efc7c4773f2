"""The command line's words before typer sees them (pure functions of argv, no imports).

- `--workspace DIR` (`-w DIR`, `--workspace=DIR`, `-wDIR`) may come before or after the
  subcommand: `hoist_workspace` moves every occurrence to the front, where the root
  group reads it. Nothing after `--` moves, and a flag with no value stays where it is
  (`valueless_workspace` names it, for a one-line error).
- `--json` may come before the command too: `normal_order` moves it after the command's
  words, where the command reads it.
- `hot_command` recognizes the few commands that run on every prompt or in scripts'
  loops (`--version`, `status`, `scan`, `hook <agent> [--project NAME] [--fallback]`,
  `changes P [--since N]`, `updates SESSION`, `session list`, `project list`, `mcp`), in
  their plain forms, so they can run without loading typer, click or rich; `service_run`
  the service as commands start it (`service run --watch ROOT…`), so it is up sooner.
  Anything else
  (`--help`, an unknown flag) is left to typer, which gives the same answer, only slower.

Nothing here imports beyond the standard library's basics (no typing, dataclasses or
enum): it runs before every command.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Sequence

LONG = "--workspace"
SHORT = "-w"
JSON = "--json"


def _workspace_at(args: Sequence[str], i: int) -> int:
    """How many words of a workspace flag start at `args[i]` (0: none there)."""
    word = args[i]
    if word.startswith(LONG + "=") or (word.startswith(SHORT) and len(word) > 2
                                       and not word.startswith("--")):
        return 1
    if word in (LONG, SHORT) and i + 1 < len(args) and args[i + 1] != "--":
        return 2
    return 0


def hoist_workspace(args: Sequence[str]) -> list[str]:
    """`args` with every workspace flag (and its value) moved to the front, in order."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--":
            rest.extend(args[i:])
            break
        taken = _workspace_at(args, i)
        if taken:
            front.extend(args[i : i + taken])
            i += taken
        else:
            rest.append(args[i])
            i += 1
    return front + rest


def normal_order(args: Sequence[str]) -> list[str]:
    """`args` as the parser reads them: the workspace flags first (`hoist_workspace`), and
    a `--json` given before the command moved to the end of the command's words (before
    any `--`). A `--json` with no command after it stays (the parser reports it), and so
    does every word beside a workspace flag without its value (`valueless_workspace`)."""
    hoisted = hoist_workspace(args)
    start = 0
    while start < len(hoisted) and (taken := _workspace_at(hoisted, start)):
        start += taken
    end = start
    while end < len(hoisted) and hoisted[end].startswith("-") and hoisted[end] != "--":
        end += 1
    moved = [w for w in hoisted[start:end] if w == JSON]
    if (not moved or end == len(hoisted) or hoisted[end] == "--"
            or valueless_workspace(hoisted) is not None):
        return hoisted
    front = [w for w in hoisted[start:end] if w != JSON]
    rest = hoisted[end:]
    cut = rest.index("--") if "--" in rest else len(rest)
    return [*hoisted[:start], *front, *rest[:cut], *moved, *rest[cut:]]


def valueless_workspace(args: Sequence[str]) -> str | None:
    """The workspace flag given without its value (the last word, or right before `--`),
    if any: click would take the next word for it, or report it as unknown."""
    cut = list(args).index("--") if "--" in args else len(args)
    last = args[cut - 1] if cut else None
    return last if last in (LONG, SHORT) else None


def split_workspace(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """The last workspace given (the one that wins) and the other words, in order."""
    hoisted = normal_order(args)
    workspace = None
    i = 0
    while i < len(hoisted) and (taken := _workspace_at(hoisted, i)):
        word = hoisted[i]
        if taken == 2:
            workspace = hoisted[i + 1]
        else:
            workspace = word.partition("=")[2] if word.startswith(LONG) else word[2:]
        i += taken
    return workspace, hoisted[i:]


def wants_json(args: Sequence[str]) -> bool:
    """Whether `--json` was given (before any `--`)."""
    for word in args:
        if word == "--":
            return False
        if word == JSON:
            return True
    return False


# The hot commands (plain strings, not an enum: this module loads on every start-up) and
# the flags each takes in the fast path; any other word and typer decides.
VERSION = "--version"  # print the version
STATUS = "status"  # per-project epochs and documents
SCAN = "scan"  # bring the index up to date
HOOK = "hook"  # `hook <agent>`: an agent's hook, on every prompt
HOOK_AGENTS = ("claude-code", "gemini-cli", "codex")  # `hook.AGENTS` (not imported: start-up)
HTTP_AGENTS = ("claude-code",)  # those whose client posts hooks (`Adapter.http_events`)
CHANGES = "changes"  # a project's changes since an epoch (fast only when the service answers)
UPDATES = "updates"  # what the next send would deliver (fast only when the service answers)
SESSIONS = "session list"  # every session (fast only when the service answers)
PROJECTS = "project list"  # the projects freshline.toml defines
MCP = "mcp"  # the MCP server over stdio: its first answers before the SDK loads
SINCE = "--since"  # changes' epoch (takes a value)
PROJECT = "--project"  # the hook's project for a new agent session (takes a value)
FALLBACK = "--fallback"  # the hook stands in for http hooks: silent while they are answered
HOT = {VERSION: frozenset(), STATUS: frozenset({JSON}), SCAN: frozenset({JSON, "--full"}),
       **{f"{HOOK} {agent}": frozenset({PROJECT, *([FALLBACK] if agent in HTTP_AGENTS else [])})
          for agent in HOOK_AGENTS},
       CHANGES: frozenset({JSON, SINCE}), UPDATES: frozenset({JSON}),
       SESSIONS: frozenset({JSON}), PROJECTS: frozenset({JSON}), MCP: frozenset()}
ARGUMENTS = {CHANGES: 1, UPDATES: 1}  # how many positional words a hot command takes
VALUED = {PROJECT: PROJECT, "-p": PROJECT, SINCE: SINCE}  # options that take a value
SERVICE_RUN = ("service", "run")
WATCH = "--watch"  # `service run`'s workspaces (repeated)

HotCall = tuple[str, "str | None", frozenset[str], tuple[str, ...]]
"""A hot command as given: which one, the workspace (if any), its flags (an option with a
value as one word, `--project=NAME`), its positional words."""


def _joined(words: Sequence[str]) -> list[str]:
    """`words` with each valued option and its value as one word, `--name=value` (a valued
    option with no value stays as it is: typer reports it)."""
    out: list[str] = []
    i = 0
    while i < len(words):
        name, eq, value = words[i].partition("=")
        long = VALUED.get(name)
        if long is not None and not eq and i + 1 < len(words):
            out.append(f"{long}={words[i + 1]}")
            i += 2
            continue
        # `--project=NAME` is the same option; click reads `-p=NAME` as the value "=NAME".
        spelt = long is not None and eq and name.startswith("--")
        out.append(f"{long}={value}" if spelt else words[i])
        i += 1
    return out


def _allowed(flag: str, allowed: frozenset[str]) -> bool:
    name, eq, _value = flag.partition("=")
    if name in VALUED.values():
        return bool(eq) and name in allowed
    return flag in allowed


def hot_command(argv: Sequence[str]) -> HotCall | None:
    """The hot command `argv` asks for, or None when typer should parse it."""
    workspace, words = split_workspace(argv)
    for command, allowed in HOT.items():
        name = command.split()
        if words[: len(name)] != name:
            continue
        joined = _joined(words[len(name) :])
        given = [w for w in joined if w.startswith("-")]
        args = tuple(w for w in joined if not w.startswith("-"))
        names = [flag.partition("=")[0] for flag in given]
        if (len(set(names)) == len(names) and all(_allowed(f, allowed) for f in given)
                and len(args) == ARGUMENTS.get(command, 0)):
            return command, workspace, frozenset(given), args
    return None


def service_run(argv: Sequence[str]) -> list[str] | None:
    """The workspaces of `service run --watch ROOT…` in its plain form (no workspace
    flag, nothing else), or None when typer should parse `argv`."""
    words = list(argv)
    if words[:2] != list(SERVICE_RUN):
        return None
    rest, roots = words[2:], []
    while rest:
        name, eq, value = rest[0].partition("=")
        if name != WATCH or (not eq and len(rest) < 2):
            return None
        roots.append(value if eq else rest[1])
        rest = rest[1:] if eq else rest[2:]
    return roots if all(roots) else None


def option_value(flags: frozenset[str], option: str) -> str | None:
    """The value a hot call's flags give `option` (`--project=NAME` → NAME), if any."""
    for flag in flags:
        name, _eq, value = flag.partition("=")
        if name == option:
            return value
    return None
