"""How long a command takes as a whole process, against an empty Python's start-up.

In a small workspace (200 notes, one project, one Claude Code session already told
everything), times each command as its own process, the best of several runs, and prints
it ÷ `python -c pass` measured in the same run (goal ≤ 5):
  freshline --version
  freshline status
  freshline hook claude-code     (a prompt with nothing to deliver, run as `hook install`
                                 writes it: `freshline --workspace ROOT hook claude-code`)
first as a user has it, with the service the first command started (status and the hook
are answered by it), then with no service (each command loads the library and the hook
scans the 200 files itself). The service is the bench's own user's: no other is touched.
Bytecode is compiled first, as an installed package has it.
Usage: python bench/startup.py [--quick]
"""

from __future__ import annotations

import compileall
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import end_private_user, private_user, start_service

import freshline
from freshline.interfaces.hook.claude_code import ADAPTER
from freshline.interfaces.hook.install import hook_command

PYTHON = sys.executable
FRESHLINE = str(Path(PYTHON).with_name("freshline"))
NOTES = 200


def best_of(runs: int, args: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> float:
    """The fastest of `runs` runs of a whole process, in seconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(args, cwd=cwd, env=env, input=stdin.encode(), capture_output=True)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {done.stderr.decode().strip()}")
    return best


def build(root: Path) -> None:
    for i in range(NOTES):
        folder = root / "notes" / f"f{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i}.md").write_text(f"# note {i}\n\nsome text #tag{i % 7}\n")
    (root / "freshline.toml").write_text('[projects.notes]\ninclude = ["notes"]\n')
    (root / ".freshline").mkdir()


def hook_payload(root: Path) -> str:
    return json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "bench",
                       "cwd": str(root / "notes"), "prompt": "hi"})


def main() -> None:
    runs = 5 if "--quick" in sys.argv else 20
    compileall.compile_dir(str(Path(freshline.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "ws"
        root.mkdir()
        private_user(Path(tmp))
        env = dict(os.environ)
        build(root)
        payload = hook_payload(root)
        hook = shlex.split(hook_command(ADAPTER, root, program=[FRESHLINE]))
        subprocess.run(hook, cwd=root, env=env, input=payload.encode(), check=True,
                       capture_output=True)  # the manifest (no transcript: taken when printed)
        rows = [
            ("freshline --version", [FRESHLINE, "--version"], ""),
            ("freshline status", [FRESHLINE, "status"], ""),
            ("freshline hook claude-code", hook, payload),
        ]
        try:
            start_service(root)
            base = best_of(runs, [PYTHON, "-c", "pass"], root, env)
            print(f"python -c pass: {base * 1000:.1f} ms (best of {runs})")
            print("with the service running (the default):")
            for label, args, stdin in rows:
                took = best_of(runs, args, root, env, stdin)
                print(f"  {label:<28} {took * 1000:6.1f} ms   ÷ python -c pass: "
                      f"{took / base:4.1f}  (goal ≤ 5)")
        finally:
            end_private_user()
        print("with no service (every command does the work itself):")
        for label, args, stdin in rows[1:]:
            took = best_of(runs, args, root, env, stdin)
            print(f"  {label:<28} {took * 1000:6.1f} ms   ÷ python -c pass: {took / base:4.1f}")


if __name__ == "__main__":
    main()
