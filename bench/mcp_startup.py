"""How long an MCP client waits for `freshline mcp` to list its tools (issue 26, item 5).

In a small workspace (200 notes) with its watcher running, starts the server as `mcp
install` writes its entry (`freshline --workspace ROOT mcp`), sends `initialize`, the
`initialized` notification and `tools/list`, and stops the clock at the tools/list
answer; then closes stdin and waits for the exit (CPU time covers the whole process).
One start before the timed runs fills the table of first answers (`mcp/front.py`), as
any earlier start has for a user; the same runs without it (the table removed before
each) are the slow path. A health check (a client that lists the tools and leaves) is
timed to the process's exit.
Each run is paired with `python -c pass` (A B A B …), the median of per-pair ratios
printed beside both medians (goal ≤ 3), and below it what importing the MCP SDK alone
costs (`python -c "import mcp.server.mcpserver"`), the floor of any server that loads it
before answering.
Usage: python bench/mcp_startup.py [--quick]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hook import python_pass
from measure import Run, end_private_user, paired, private_user, run, start_service
from startup import NOTES, build

from freshline.interfaces.mcp.front import TABLE_NAME

RUNS = 3 if "--quick" in sys.argv else 7
FRESHLINE = str(Path(sys.executable).with_name("freshline"))
PYTHON = str(Path(sys.executable).absolute())
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}
LIST = [{"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]


def first_tools(root: Path, to_exit: bool = False) -> Run:
    """Start the server, list its tools: the wall time to that answer (`to_exit`: to the
    process's exit once its input is closed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    server = subprocess.Popen([FRESHLINE, "--workspace", str(root), "mcp"], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(json.dumps(HELLO) + "\n")
        server.stdin.flush()
        if json.loads(server.stdout.readline()).get("id") != 1:
            raise SystemExit("bench: no answer to initialize")
        server.stdin.write("".join(json.dumps(m) + "\n" for m in LIST))
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        wall = time.perf_counter() - start
        if not answer.get("result", {}).get("tools"):
            raise SystemExit(f"bench: tools/list answered {answer}")
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    if to_exit:
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "ws"
        build(root)
        private_user(Path(tmp))
        run([FRESHLINE, "--workspace", str(root), "scan"])
        start_service(root)
        table = root / ".freshline" / TABLE_NAME
        try:
            first_tools(root)  # fills the table
            print(f"a workspace of {NOTES} notes, the service watching it: p50 ratio (CPU), "
                  "A ÷ python -c pass")
            figure = paired(lambda: first_tools(root), python_pass, RUNS)
            print(f"{'initialize → first tools/list':34} {figure.line()}   goal ≤ 3")
            check = paired(lambda: first_tools(root, to_exit=True), python_pass, RUNS)
            print(f"{'  health check: to the exit':34} {check.line()}")
            slow = paired(lambda: first_tools(root), python_pass, RUNS,
                          lambda: table.unlink(missing_ok=True))
            print(f"{'  (slow path: no table)':34} {slow.line()}")
            sdk = paired(lambda: run([PYTHON, "-c", "import mcp.server.mcpserver"]),
                         python_pass, RUNS)
            print(f"{'  floor: import the MCP SDK':34} {sdk.line()}")
        finally:
            end_private_user()


if __name__ == "__main__":
    main()
