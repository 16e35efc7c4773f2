"""`freshline chat`, `mcp`, `hook claude-code` and `demo`: the front ends on the library.

Each imports its front end when called: textual and the MCP SDK are slow to import, and
every other command (and the hook, which runs on every prompt) should not pay for them.
"""

from __future__ import annotations

import sys

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import config, state
from freshline.interfaces.cli.output import say
from freshline.interfaces.cli.sessions import BaseUrlOption, ModelOption

hook_app = typer.Typer(help="Hooks that bring freshness to agents you already use.")


def chat(
    ctx: typer.Context,
    project: str = typer.Option(None, "--project", "-p", help="Open a new session on it."),
    session: str = typer.Option(None, "--session", "-s", help="Resume this session."),
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

    session_id = run_chat(config(ctx), project, session, model, base_url)
    say(f"session {session_id} (resume with: freshline chat --session {session_id})")


def mcp(ctx: typer.Context) -> None:
    """Serve the workspace to MCP clients over stdio.

    Example: freshline mcp --workspace ~/notes   (as an mcpServers entry)
    """
    from freshline.interfaces.mcp_server import mcp_command

    mcp_command(state(ctx).workspace)


@hook_app.command("claude-code")
def claude_code() -> None:
    """Claude Code hook: print what changed as additional context (never blocks a prompt).

    Example: "command": "freshline hook claude-code" under UserPromptSubmit and SessionStart
    """
    from freshline.interfaces.hooks import claude_code_hook

    raise typer.Exit(claude_code_hook())


def demo() -> None:
    """Walk through the whole mission in a temporary workspace, offline, with a scripted model.

    Example: freshline demo
    """
    from freshline.interfaces.demo import run_demo

    run_demo()
