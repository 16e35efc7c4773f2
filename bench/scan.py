"""How a scan's cost compares with git's on the same tree.

Builds trees of 10k and 100k files in a git repository and prints, per size:
  rescan ÷ git status      no-change full rescan ÷ `git status --porcelain`        (goal ≤ 1.5)
                           by the tracker that scanned before (index stats in memory)
                           and by a new one, as a new process would (stats loaded)
  first scan ÷ git add     first scan (hashing all) ÷ `git add -A` + `write-tree`  (goal ≤ 1.5)
  hinted ÷ rescan          flush of 10 hinted changes ÷ no-change full rescan      (goal ≤ 0.05)
  peak RSS                 of a process doing the first full scan
Usage: python bench/scan.py [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from freshline.config import load_config
from freshline.tracker import Tracker

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def build(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"d{i % 100}" / f"s{(i // 100) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"note{i}.md").write_text(f"# note {i}\n\nsome text #tag{i % 7}\n" * 3)
    (root / "freshline.toml").write_text('[projects.all]\ninclude = ["**"]\n')
    (root / ".freshline").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=GIT_ENV)
    (root / ".git" / "info" / "exclude").write_text(".freshline/\n")


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def git(root: Path, *args: str, index: str | None = None) -> None:
    env = dict(GIT_ENV, GIT_INDEX_FILE=index) if index else GIT_ENV
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env, stdout=subprocess.DEVNULL)


RSS_CODE = """
import resource, sys
from freshline.config import load_config
from freshline.tracker import Tracker
Tracker(load_config(sys.argv[1])).scan()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def first_scan_rss(n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), n)
        out = subprocess.run(
            [sys.executable, "-c", RSS_CODE, tmp], check=True, capture_output=True, text=True
        )
        return int(out.stdout)


def bench(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, n)
        index = str(root / ".git" / "bench-index")
        git_add = timed(
            lambda: (git(root, "add", "-A", index=index), git(root, "write-tree", index=index))
        )
        tracker = Tracker(load_config(root))
        first = timed(tracker.scan)
        git(root, "add", "-A")  # so git status has an index to compare, as ours does
        git(root, "status", "--porcelain")
        status = min(timed(lambda: git(root, "status", "--porcelain")) for _ in range(3))
        time.sleep(2.1)  # past the racy window, so the rescan trusts every stat
        tracker.scan()
        rescan = min(timed(tracker.scan) for _ in range(3))
        fresh = min(timed(lambda: Tracker(load_config(root)).scan()) for _ in range(3))
        changed = [f"d{i}/s0/note{i}.md" for i in range(10)]
        for p in changed:
            (root / p).write_text("changed\n")
        hinted = timed(lambda: tracker.scan(changed))
        print(
            f"{n:>7} files  rescan ÷ git status   {rescan / status:6.2f}  "
            f"({rescan * 1000:.0f} ms vs {status * 1000:.0f} ms)"
        )
        print(f"{'':>13}  ... new tracker       {fresh / status:6.2f}  ({fresh * 1000:.0f} ms)")
        print(
            f"{'':>13}  first scan ÷ git add  {first / git_add:6.2f}  "
            f"({first * 1000:.0f} ms vs {git_add * 1000:.0f} ms)"
        )
        print(
            f"{'':>13}  hinted ÷ rescan       {hinted / rescan:6.3f}  "
            f"({hinted * 1000:.1f} ms for 10 changes)"
        )
        print(f"{'':>13}  peak RSS of a first scan: {first_scan_rss(n)} MiB")


if __name__ == "__main__":
    sizes = [2_000] if "--quick" in sys.argv else [10_000, 100_000]
    for size in sizes:
        bench(size)
