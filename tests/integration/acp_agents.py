"""The third-party ACP agents the suite runs behind `freshline acp`, installed by the suite
(`clients.install`: pinned npm packages in `.cache/real-clients/`), and how to run them
offline.
"""

from __future__ import annotations

from tests.integration.clients import NpmClient

# Zed's ACP adapter for Claude Code; it bundles the Claude Agent SDK (Claude Code 2.1.x as
# JavaScript), so it needs nothing but Node 20.
CLAUDE_CODE_ACP = NpmClient("@zed-industries/claude-code-acp", "0.16.2", "claude-code-acp")

# Claude Code offline against a loopback stub (`anthropic_stub.py`): no telemetry, no
# updates, no error reports. IS_SANDBOX: the suite may run as root, where Claude Code
# refuses to start unless told it is sandboxed (the adapter offers the bypass mode).
OFFLINE = {"ANTHROPIC_API_KEY": "sk-offline", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1"}
