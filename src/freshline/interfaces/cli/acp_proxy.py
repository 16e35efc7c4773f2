"""`freshline acp`: the Agent Client Protocol proxy, as a command (`interfaces/acp/`)."""

from __future__ import annotations

import typer

from freshline.interfaces.cli.common import state

# Everything after the agent's name is the agent's: options are read up to it only.
CONTEXT = {"allow_interspersed_args": False}


def acp(
    ctx: typer.Context,
    agent: list[str] = typer.Argument(
        None, metavar="-- AGENT_COMMAND [ARGS]...", show_default=False,
        help="The ACP agent to start, and its arguments.",
    ),
    project: str | None = typer.Option(
        None, "--project", "-p",
        help="The project of every session (default: the one whose folder holds its cwd).",
    ),
) -> None:
    """Run an ACP agent behind freshline, for any Agent Client Protocol client.

    Your client (Zed, JetBrains, Neovim, obsidian-copilot...) starts this as
    its agent; freshline starts AGENT_COMMAND and passes every message on:
    - each prompt reaches the agent with the project's manifest first, then
      exactly what changed since its last prompt (paths only), in a block
      meant for the agent, never shown as your words;
    - they count as delivered once the agent answers (not a refusal, not a
      cancel before any output); after an error they come again;
    - files the agent reads or writes through the client feed the read
      ledger: its own writes are not announced back, files it read that
      changed are named first.
    A session's workspace is found from its cwd (or --workspace DIR, given
    before the --), its project is the one whose folder holds the cwd.

    Example: freshline acp --project notes -- claude-code-acp
    """
    from freshline.interfaces.acp import run_acp

    # `--workspace` (anywhere before `--`) is the root group's: every session's workspace.
    raise typer.Exit(run_acp(agent or [], state(ctx).workspace, project))
