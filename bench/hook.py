"""What the Claude Code hook costs in a big vault, as Claude Code runs it (a new process).

Builds a vault of 20,000 notes (not a git checkout: the case where the hook once wrote a
copy of the vault into `.freshline/conversations.git`) and prints
  first call            the first UserPromptSubmit of a session: index, manifest, print
                        (goal ≤ 1.5 s)
  first ÷ first scan    ÷ `freshline scan` indexing a fresh copy of the same vault, the
                        floor any first call stands on
  later call            a prompt with nothing new (goal: dominated by process start), once
                        the watcher the first call started is up, as it is by the time
                        the agent's turn ends and the next prompt comes
  later ÷ start         ÷ `python -c "import freshline"`
  .freshline size       what the first call left on disk (no conversation tree)
Usage: python bench/hook.py [--quick]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from measure import timed

from freshline.store import Store
from freshline.tracker.autowatch import stop
from freshline.tracker.hints import watcher_alive

FILES = 2_000 if "--quick" in sys.argv else 20_000


def build(root: Path, n: int) -> None:
    for i in range(n):
        folder = root / f"area{i % 40}" / f"topic{(i // 40) % 25}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\nSee [[note {i + 1}]] #tag{i % 9}\n")
    # `area*/**`: every note (a bare `area*` names only the top folders, no file at all).
    (root / "freshline.toml").write_text('[projects.vault]\ninclude = ["area*/**"]\n')
    (root / ".freshline").mkdir()


def hook(root: Path, session: str) -> tuple[float, float]:
    payload = json.dumps({"session_id": session, "cwd": str(root), "prompt": "hi",
                          "hook_event_name": "UserPromptSubmit"})
    command = [sys.executable, "-m", "freshline", "--workspace", str(root), "hook", "claude-code"]
    return timed(command, payload)


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        vault, copy = Path(tmp) / "vault", Path(tmp) / "copy"
        build(vault, FILES)
        shutil.copytree(vault, copy)
        try:
            scan = timed([sys.executable, "-m", "freshline", "--workspace", str(copy), "scan"])
            first = hook(vault, "bench-1")
            store = Store(vault / ".freshline")
            deadline = time.monotonic() + 120
            while not watcher_alive(store) and time.monotonic() < deadline:
                time.sleep(0.05)  # the heartbeat starts after the watcher's first full scan
            later = min(hook(vault, "bench-1") for _ in range(3))
            start = min(timed([sys.executable, "-c", "import freshline"]) for _ in range(3))
            data = size_of(vault / ".freshline")
        finally:  # the commands started watchers; they must not outlive their folders
            stop(vault)
            stop(copy)
    print(f"hook in a vault of {FILES:,} notes (wall s / CPU s)")
    print(f"  first call            {first[0]:6.2f} / {first[1]:5.2f}   (goal ≤ 1.5 s)")
    print(f"  first ÷ first scan    {first[0] / scan[0]:6.2f} / {first[1] / scan[1]:5.2f}"
          f"   (scan {scan[0]:.2f} / {scan[1]:.2f})")
    print(f"  later call            {later[0]:6.2f} / {later[1]:5.2f}")
    print(f"  later ÷ start         {later[0] / start[0]:6.2f} / {later[1] / start[1]:5.2f}"
          f"   (python -c 'import freshline' {start[0]:.2f} / {start[1]:.2f})")
    print(f"  .freshline size       {data / 1e6:6.1f} MB  (no conversation tree)")


if __name__ == "__main__":
    main()
