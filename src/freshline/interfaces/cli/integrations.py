"""`freshline chat`, `mcp`, `hook <agent>` and `demo`: the front ends on the library.

Each imports its front end when called: textual and the MCP SDK are slow to import, and
every other command (and the hook, which runs on every prompt) should not pay for them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.argv import HTTP_AGENTS
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
    scope: str = typer.Option(
        None, "--scope",
        help="project (default): the workspace's .codex/config.toml, required there; user: "
        "~/.codex/config.toml, for every folder, not required.",
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="Codex's own config file, for --scope user (the default scope "
        "with it; default file: ~/.codex/config.toml)."
    ),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove freshline's entry instead."),
    as_json: bool = JsonOption,
) -> None:
    """Write freshline's MCP server into Codex CLI's config (merged; safe to run again).

    Installed for the project, Codex waits for the server in this workspace only (and
    reads it once it trusts the project); for the user, every folder gets it, not
    required, so a workspace that is gone never stops Codex from starting.

    Example: freshline mcp install codex
    """
    from freshline.interfaces.hook.install import Scope
    from freshline.interfaces.mcp.install import install_codex

    if client != "codex":
        raise UsageError(f"no MCP install for client '{client}' (there is one for: codex)")
    chosen = scope or ("user" if config_file else "project")
    if chosen not in {s.value for s in Scope}:
        raise UsageError(f"--scope must be project or user, not '{chosen}'")
    if config_file is not None and chosen != Scope.USER:
        raise UsageError("--config names Codex's own config: it goes with --scope user")
    done = install_codex(config(ctx).root, Scope(chosen), config_file, uninstall)
    to_trust = None if uninstall or done.scope is Scope.USER or done.trusted else CODEX_TRUST
    data = {"config": str(done.path), "scope": done.scope.value, "entry": done.entry,
            "changed": done.changed, "installed": not uninstall,
            "required": bool(done.entry and done.entry["required"]),
            "removed_from": str(done.dropped) if done.dropped else None,
            "to_trust": to_trust.format(root=config(ctx).root) if to_trust else None}

    def human() -> None:
        verb = "removed freshline's MCP server from" if uninstall else "installed the MCP server in"
        say(f"{verb} {done.path}" + ("" if done.changed else " (unchanged)"))
        if not uninstall:
            say(MCP_SCOPES[done.scope])
        if done.dropped:
            say(f"removed the earlier install for this workspace from {done.dropped}")
        if data["to_trust"]:
            say(str(data["to_trust"]))

    emit(data, as_json, human)


MCP_SCOPES = {
    "project": "for this project, required: Codex started in this workspace waits for it; "
               "no other folder reads it",
    "user": "for every folder, not required: a workspace that is gone never stops Codex from "
            "starting (a slow first start may leave its tools to the next turn)",
}
CODEX_TRUST = ("Codex reads a project's .codex/config.toml only in a project it trusts: trust "
               "{root} when Codex asks, or add [projects.\"{root}\"] trust_level = \"trusted\" "
               "to ~/.codex/config.toml")


def _hook_command(agent: str, client: str, settings: str) -> None:
    """Register `freshline hook <agent>`: the hook process of one agent's client (with
    `--fallback` for one that posts its hooks to the service)."""

    def run(
        ctx: typer.Context,
        project: str = typer.Option(
            None, "--project", "-p", help="Pin every session to this project (default: by folder)."
        ),
    ) -> None:
        answer(ctx, project, False)

    def run_http(
        ctx: typer.Context,
        project: str = typer.Option(
            None, "--project", "-p", help="Pin every session to this project (default: by folder)."
        ),
        fallback: bool = typer.Option(
            False, "--fallback", help="Stand in for the http hooks: print nothing while the "
            "service answers them."),
    ) -> None:
        answer(ctx, project, fallback)

    def answer(ctx: typer.Context, project: str | None, fallback: bool) -> None:
        from freshline.interfaces.cli.fast import hook

        workspace = state(ctx).workspace
        raise typer.Exit(hook(agent, str(workspace) if workspace else None, project, fallback))

    command = run_http if agent in HTTP_AGENTS else run
    command.__doc__ = (f"{client} hook: print what changed as additional context (never "
                       f"blocks a prompt).\n\nExample: freshline hook install {agent}   "
                       f"(writes this command into {settings})")
    hook_app.command(agent)(command)


_hook_command("claude-code", "Claude Code", ".claude/settings.local.json")
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
    commands_only: bool = typer.Option(
        False, "--command-hooks",
        help="Claude Code: a command on every event rather than http hooks to the service "
        "(Claude Code before 2.1.139, the Agent SDK inside claude-code-acp)."),
    as_json: bool = JsonOption,
) -> None:
    """Write freshline's hook into an agent's settings (merged; safe to run again).

    Example: freshline hook install gemini-cli --project notes
    """
    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.install import Scope
    from freshline.interfaces.hook.install import install as install_hook
    from freshline.interfaces.service.places import hooks_path

    chosen = adapter(agent)
    cfg = config(ctx)
    if chosen.name == "codex" and not uninstall:
        from freshline.interfaces.mcp.install import refuse_with_server

        refuse_with_server(cfg.root)
    if scope not in {s.value for s in Scope}:
        raise UsageError(f"--scope must be project or user, not '{scope}'")
    if project is not None:
        cfg.project(project)
    done = install_hook(chosen, cfg.root, Scope(scope), project, uninstall, commands_only)
    trust = None if uninstall or chosen.how_to_trust is None \
        else chosen.how_to_trust.format(root=cfg.root, settings=done.path)
    data = {"settings": str(done.path), "command": done.command, "changed": done.changed,
            "installed": not uninstall, "to_trust": trust, "url": done.url,
            "moved_from": str(done.cleared) if done.cleared else None}

    def human() -> None:
        verb = "removed freshline's hook from" if uninstall else "installed the hook in"
        say(f"{verb} {done.path}" + ("" if done.changed else " (unchanged)"))
        if done.cleared:
            say(f"removed freshline's entries from {done.cleared}")
        if done.command:
            say(f"command: {done.command}")
        if done.url:
            say(f"http hooks: {done.url.split('/freshline/')[0]} (with your secret, kept in "
                f"{hooks_path()})")
        if trust:
            say(trust)

    emit(data, as_json, human)


def demo() -> None:
    """Walk through the whole mission in a temporary workspace, offline, with a scripted model.

    Example: freshline demo
    """
    from freshline.interfaces.demo import run_demo

    run_demo()
