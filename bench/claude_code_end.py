"""SessionEnd under the real Claude Code: 10 `claude -p` runs, 0 sessions left active.

Issue 26 asks that the freshline session be closed every time Claude Code ends one. The
suite checks it on 2 runs (each costs Claude Code's start-up); this runs the same test,
`test_every_session_end_closes_its_session_through_the_service`, with 10 one-turn runs
against the loopback model stub, the hooks answered by the service, and prints
whether every session was closed and what a run cost.
Usage: python bench/claude_code_end.py [RUNS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = ("tests/integration/test_claude_code.py::"
        "test_every_session_end_closes_its_session_through_the_service")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           TEST], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "FRESHLINE_CLAUDE_END_RUNS": str(runs)})
    took = time.perf_counter() - start
    verdict = "0 sessions left active" if done.returncode == 0 else "FAILED"
    print(f"SessionEnd under the real Claude Code, {runs} `claude -p` runs: {verdict} "
          f"({took / runs:.1f} s a run, the test's set-up included)")
    if done.returncode != 0:
        raise SystemExit(done.stdout[-3000:])


if __name__ == "__main__":
    main()
