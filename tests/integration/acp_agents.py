"""How the suite runs the third-party ACP agents behind `freshline acp` offline (the agents
themselves are pinned npm packages installed by `clients.install`)."""

from __future__ import annotations

# Claude Code offline against a loopback stub (`anthropic_stub.py`): no telemetry, no
# updates, no error reports. IS_SANDBOX: the suite may run as root, where Claude Code
# refuses to start unless told it is sandboxed (the adapter offers the bypass mode).
OFFLINE = {"ANTHROPIC_API_KEY": "sk-offline", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1"}
