"""`freshline mcp`: the MCP server over stdio, for agents that speak the Model Context
Protocol (its tools: `service.py`; its surface: `surface.py`).

    python -m freshline.interfaces.mcp [--workspace DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from freshline.config import Config, find_workspace, load_config
from freshline.errors import FreshlineError
from freshline.interfaces.mcp.service import FreshlineService, long_lived
from freshline.interfaces.mcp.surface import build_server
from freshline.session.owners import owned_by


def serve(config: Config, watch: bool = True, delivers: bool = True) -> None:
    """Serve the workspace of `config` over stdio until EOF (`delivers`: see
    `build_server`)."""
    service = FreshlineService(config)
    try:
        server = build_server(service, watch, delivers=delivers)
        long_lived()
        server.run("stdio")
    finally:
        service.close()


def mcp_command(workspace: Path | None) -> None:
    """Serve the workspace (`workspace`, else found from the cwd) over stdio until EOF.
    Started inside an agent another channel runs (the ACP proxy's mark, `FRESHLINE_OWNER`),
    it only pages and reads: that channel delivers to the conversation, and it watches
    already."""
    owned = owned_by(os.environ) is not None
    serve(load_config(find_workspace(Path.cwd(), workspace)), watch=not owned,
          delivers=not owned)


def main(argv: list[str] | None = None) -> None:
    """`python -m freshline.interfaces.mcp [--workspace DIR]`."""
    parser = argparse.ArgumentParser(prog="freshline mcp", description=__doc__)
    parser.add_argument("--workspace", "-w", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        mcp_command(args.workspace)
    except FreshlineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
