"""`freshline chat`, `mcp`, `hook claude-code` and `demo`: the front ends on the library.

Each imports its front end when called: textual and the MCP SDK are slow to import, and
every other command (and the hook, which runs on every prompt) should not pay for them.
"""

from __future__ import annotations

import sys

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption, config, state
from freshline.interfaces.cli.output import emit, say
from freshline.interfaces.cli.sessions import BaseUrlOption, ModelOption

hook_app = typer.Typer(help="Hooks that bring freshness to agents you already use.")


def chat(
    ctx: typer.Context,
    project: str = typer.Option(None, "--project", "-p", help="Open a new session on it."),
    session: str = typer.Option(None, "--session", "-s", help="Resume this session."),
    resume_last: bool = typer.Option(
        False, "--continue", "-c", help="Resume the chat session used last (of --project)."
    ),
    model: str = ModelOption,
    base_url: str = BaseUrlOption,
) -> None:
    """Chat with an agent in the terminal; it is told what changed on every turn.

    Example: freshline chat --project notes --model openai:gpt-4o-mini
    """
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise UsageError("chat needs a terminal (standard input and output are not one); "
                         "in scripts use `freshline send`")
    from freshline.interfaces.tui.app import run_chat

    session_id = run_chat(config(ctx), project, session, model, base_url, resume_last)
    say(f"session {session_id} (resume with: freshline chat --session {session_id})")


def mcp(ctx: typer.Context) -> None:
    """Serve the workspace to MCP clients over stdio.

    Example: freshline mcp --workspace ~/notes   (as an mcpServers entry)
    """
    from freshline.interfaces.mcp.stdio import mcp_command

    mcp_command(state(ctx).workspace)


@hook_app.command("claude-code")
def claude_code(
    ctx: typer.Context,
    project: str = typer.Option(
        None, "--project", "-p", help="Pin every session to this project (default: by folder)."
    ),
) -> None:
    """Claude Code hook: print what changed as additional context (never blocks a prompt).

    Example: freshline hook install claude-code   (writes this command into .claude/settings.json)
    """
    from freshline.interfaces.hook.process import run_hook

    raise typer.Exit(run_hook("claude-code", state(ctx).workspace, project))


@hook_app.command("install")
def install(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="The agent to install the hook for: claude-code."),
    project: str = typer.Option(
        None, "--project", "-p", help="Pin every session to this project (default: by folder)."
    ),
    scope: str = typer.Option(
        "project", "--scope", help="project: <workspace>/.claude/settings.json; user: ~/.claude/."
    ),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove freshline's hook instead."),
    as_json: bool = JsonOption,
) -> None:
    """Write freshline's hook into Claude Code's settings (merged; safe to run again).

    Example: freshline hook install claude-code --project notes
    """
    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.install import Scope
    from freshline.interfaces.hook.install import install as install_hook

    chosen = adapter(agent)
    if scope not in {s.value for s in Scope}:
        raise UsageError(f"--scope must be project or user, not '{scope}'")
    cfg = config(ctx)
    if project is not None:
        cfg.project(project)
    done = install_hook(chosen, cfg.root, Scope(scope), project, uninstall)
    data = {"settings": str(done.path), "command": done.command, "changed": done.changed,
            "installed": not uninstall}

    def human() -> None:
        verb = "removed freshline's hook from" if uninstall else "installed the hook in"
        say(f"{verb} {done.path}" + ("" if done.changed else " (unchanged)"))
        if done.command:
            say(f"command: {done.command}")

    emit(data, as_json, human)


def demo() -> None:
    """Walk through the whole mission in a temporary workspace, offline, with a scripted model.

    Example: freshline demo
    """
    from freshline.interfaces.demo import run_demo

    run_demo()
