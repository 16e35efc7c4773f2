"""`freshline chat`, `mcp`, `hook <agent>` and `demo`: the front ends on the library.

Each imports its front end when called: textual and the MCP SDK are slow to import, and
every other command (and the hook, which runs on every prompt) should not pay for them.
"""

from __future__ import annotations

import sys
from pathlib import Path

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
    from freshline.interfaces.tui.opening import run_chat

    session_id = run_chat(config(ctx), project, session, model, base_url, resume_last)
    say(f"session {session_id} (resume with: freshline chat --session {session_id})")


mcp_app = typer.Typer()  # its help: the callback's docstring


@mcp_app.callback(invoke_without_command=True)
def mcp(ctx: typer.Context) -> None:
    """Serve the workspace to MCP clients over stdio.

    Example: freshline mcp --workspace ~/notes   (as an mcpServers entry)
    """
    if ctx.invoked_subcommand is not None:
        return
    from freshline.interfaces.mcp.stdio import mcp_command

    mcp_command(state(ctx).workspace)


@mcp_app.command("install")
def mcp_install(
    ctx: typer.Context,
    client: str = typer.Argument(..., help="The MCP client to install freshline in: codex."),
    config_file: Path | None = typer.Option(
        None, "--config", help="The client's config file (default: ~/.codex/config.toml)."
    ),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove freshline's entry instead."),
    as_json: bool = JsonOption,
) -> None:
    """Write freshline's MCP server into Codex CLI's config (merged; safe to run again).

    Example: freshline mcp install codex
    """
    from freshline.interfaces.mcp.install import install_codex

    if client != "codex":
        raise UsageError(f"no MCP install for client '{client}' (there is one for: codex)")
    done = install_codex(config(ctx).root, config_file, uninstall)
    data = {"config": str(done.path), "entry": done.entry, "changed": done.changed,
            "installed": not uninstall}

    def human() -> None:
        verb = "removed freshline's MCP server from" if uninstall else "installed the MCP server in"
        say(f"{verb} {done.path}" + ("" if done.changed else " (unchanged)"))

    emit(data, as_json, human)


def _hook_command(agent: str, client: str, settings: str) -> None:
    """Register `freshline hook <agent>`: the hook process of one agent's client."""

    def run(
        ctx: typer.Context,
        project: str = typer.Option(
            None, "--project", "-p", help="Pin every session to this project (default: by folder)."
        ),
    ) -> None:
        from freshline.interfaces.hook.process import run_hook

        raise typer.Exit(run_hook(agent, state(ctx).workspace, project))

    run.__doc__ = (f"{client} hook: print what changed as additional context (never blocks "
                   f"a prompt).\n\nExample: freshline hook install {agent}   (writes this "
                   f"command into {settings})")
    hook_app.command(agent)(run)


_hook_command("claude-code", "Claude Code", ".claude/settings.json")
_hook_command("gemini-cli", "Gemini CLI", ".gemini/settings.json")
_hook_command("codex", "Codex CLI", ".codex/hooks.json")


@hook_app.command("install")
def install(
    ctx: typer.Context,
    agent: str = typer.Argument(
        ..., help="The agent to install the hook for: claude-code, gemini-cli, codex."
    ),
    project: str = typer.Option(
        None, "--project", "-p", help="Pin every session to this project (default: by folder)."
    ),
    scope: str = typer.Option(
        "project", "--scope",
        help="project: the agent's settings in the workspace (.claude/, .gemini/, .codex/); "
        "user: those in your home.",
    ),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove freshline's hook instead."),
    as_json: bool = JsonOption,
) -> None:
    """Write freshline's hook into an agent's settings (merged; safe to run again).

    Example: freshline hook install gemini-cli --project notes
    """
    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.install import Scope
    from freshline.interfaces.hook.install import install as install_hook

    chosen = adapter(agent)
    if chosen.name == "codex" and not uninstall:
        from freshline.interfaces.mcp.install import refuse_with_server

        refuse_with_server()
    if scope not in {s.value for s in Scope}:
        raise UsageError(f"--scope must be project or user, not '{scope}'")
    cfg = config(ctx)
    if project is not None:
        cfg.project(project)
    done = install_hook(chosen, cfg.root, Scope(scope), project, uninstall)
    trust = None if uninstall or chosen.how_to_trust is None \
        else chosen.how_to_trust.format(root=cfg.root, settings=done.path)
    data = {"settings": str(done.path), "command": done.command, "changed": done.changed,
            "installed": not uninstall, "to_trust": trust}

    def human() -> None:
        verb = "removed freshline's hook from" if uninstall else "installed the hook in"
        say(f"{verb} {done.path}" + ("" if done.changed else " (unchanged)"))
        if done.command:
            say(f"command: {done.command}")
        if trust:
            say(trust)

    emit(data, as_json, human)


def demo() -> None:
    """Walk through the whole mission in a temporary workspace, offline, with a scripted model.

    Example: freshline demo
    """
    from freshline.interfaces.demo import run_demo

    run_demo()
