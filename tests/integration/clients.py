"""The real clients the integration suite runs, installed by the suite itself.

Each client is an npm package at a pinned version, installed with the machine's npm into
`<repo>/.cache/real-clients/<package>-<version>/` (ignored by git, kept between runs: a
clean clone installs once, later runs reuse it). Nothing is installed globally. Without
Node.js or npm the suite fails with a one-line reason.

`python -m tests.integration.clients` installs every client missing, one after another:
the Makefile runs it beside pip, and each of the two keeps about one core busy for a
minute (npm installs side by side would only slow pip down). Needs only the standard
library.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "real-clients"
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class NpmClient:
    """A client shipped on npm."""

    package: str
    version: str  # pinned: the suite tests exactly this version
    command: str | None  # its executable in node_modules/.bin (None: a library)
    postinstall: str | None = None  # a script npm 11 would not run, relative to the package

    @property
    def folder(self) -> Path:
        """Where it is installed."""
        return CACHE / f"{self.package.replace('/', '__').lstrip('@')}-{self.version}"

    @property
    def package_dir(self) -> Path:
        """The installed package itself."""
        return self.folder / "node_modules" / self.package

    @property
    def executable(self) -> Path:
        """Its command, or for a library its package folder."""
        if self.command is None:
            return self.package_dir
        return self.folder / "node_modules" / ".bin" / self.command


# The MCP Inspector's CLI (a library: `build/index.js` is the program `mcp-inspector --cli`
# runs; the whole Inspector adds its web UI, 240 packages). 0.15 is the last line that runs
# on Node 20 (0.16 wants Node 22.7.5).
INSPECTOR = NpmClient("@modelcontextprotocol/inspector-cli", "0.15.0", None)
# Claude Code: a native binary, placed by the package's install script.
CLAUDE_CODE = NpmClient("@anthropic-ai/claude-code", "2.1.332", "claude", "install.cjs")
# Gemini CLI (Node 20 is enough) and Codex CLI (a Node shim over a vendored binary).
GEMINI_CLI = NpmClient("@google/gemini-cli", "0.61.0", "gemini")
CODEX = NpmClient("@openai/codex", "0.171.0", "codex")
# A certified OpenID Connect / OAuth 2.1 authorization server (a library: the suite's own
# script, tests/oidc_provider.mjs, runs it).
OIDC_PROVIDER = NpmClient("oidc-provider", "9.13.3", None)
# Zed's ACP adapter for Claude Code; it bundles the Claude Agent SDK (Claude Code 2.1.x as
# JavaScript), so it needs nothing but Node 20.
CLAUDE_CODE_ACP = NpmClient("@zed-industries/claude-code-acp", "0.16.2", "claude-code-acp")
EVERY_CLIENT = (INSPECTOR, CLAUDE_CODE, CLAUDE_CODE_ACP, GEMINI_CLI, CODEX, OIDC_PROVIDER)


def require_node() -> None:
    """Fail the calling test, in one line, when Node.js or npm is missing."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            fail(f"the real-client tests need Node.js and npm on PATH: {tool} not found")


def fail(message: str) -> NoReturn:
    """Fail the calling test in one line; run as a script, exit 1 with that line."""
    if "pytest" in sys.modules:
        import pytest

        pytest.fail(message, pytrace=False)
    raise SystemExit(f"clients: {message}")


def npm_env() -> dict[str, str]:
    """npm's environment: its download cache beside the installs, no chatter."""
    return {**os.environ, "npm_config_cache": str(CACHE / "npm-cache"),
            "npm_config_update_notifier": "false", "npm_config_fund": "false",
            "npm_config_audit": "false"}


@contextmanager
def _locked(client: NpmClient) -> Iterator[None]:
    """One installer per client at a time (npm's cache takes concurrent installs)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with client.folder.with_name(client.folder.name + ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def install(client: NpmClient) -> Path:
    """The client's executable (a library: its package folder), installed first if this
    cache has not got it yet."""
    require_node()
    marker = client.folder / ".installed"
    if marker.is_file() and client.executable.exists():
        return client.executable
    with _locked(client):
        if marker.is_file() and client.executable.exists():
            return client.executable
        shutil.rmtree(client.folder, ignore_errors=True)
        client.folder.mkdir(parents=True)
        manifest = {"private": True, "dependencies": {client.package: client.version}}
        (client.folder / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
        _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], client.folder)
        if client.postinstall:
            _run(["node", client.postinstall], client.package_dir)
        marker.write_text(client.version, encoding="utf-8")
    return client.executable


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, env=npm_env(), capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        fail(f"`{' '.join(command)}` failed in {cwd}: {last}")


def main() -> None:
    """Install every client missing."""
    require_node()
    for client in EVERY_CLIENT:
        install(client)
    print(f"clients: {len(EVERY_CLIENT)} real clients ready in {CACHE}")


if __name__ == "__main__":
    main()
