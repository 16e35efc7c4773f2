"""Whole commands on a git checkout, as a user runs them (the service running, as by default).

Builds git checkouts of 1k and 50k files with one project over the whole tree, starts the
service (the bench's own user's) watching both, and prints:
  scan ÷ git status      a no-change `freshline scan` ÷ `git status --porcelain`, both as
                         whole processes on the 50k checkout (best of several)  (goal ≤ 1.5)
  send 50k ÷ send 1k     `freshline send` (echo model) after 10 changed files, the median
                         of several rounds, at 50k ÷ at 1k                     (goal ≤ 1.5)
The two checkouts take turns in each round, so both see the machine alike; the service
is stopped at the end. Usage: python bench/cli.py [--quick] (10k, not 50k)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import end_private_user, private_user, start_service

FRESHLINE = str(Path(sys.executable).with_name("freshline"))
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
ROUNDS = 7
CHANGES = 10


def build(root: Path, n: int) -> None:
    """A committed git checkout of `n` notes in 100 folders, one project over all of it."""
    for i in range(n):
        folder = root / f"d{i % 100}" / f"s{(i // 100) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i}.md").write_text(f"# note {i}\n\nsome text #tag{i % 7}\n")
    (root / "freshline.toml").write_text('[projects.all]\ninclude = ["**"]\n')
    (root / ".freshline").mkdir()
    (root / ".freshline" / ".gitignore").write_text("*\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "notes"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True)


def freshline(root: Path, *args: str) -> str:
    done = subprocess.run([FRESHLINE, *args], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"freshline {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def sends(roots: list[Path]) -> dict[Path, list[float]]:
    """Seconds of `freshline send` after each round of 10 changed files, per workspace; the
    workspaces take turns within each round, so both see the machine alike."""
    sessions = {}
    for root in roots:
        sessions[root] = freshline(root, "session", "new", "--project", "all").strip()
        freshline(root, "send", sessions[root], "first", "--model", "echo")
    seconds: dict[Path, list[float]] = {root: [] for root in roots}
    for r in range(ROUNDS):
        for root in roots:
            for i in range(CHANGES):
                (root / f"d{i}" / "s0" / f"note{i}.md").write_text(f"round {r} change {i}\n")
            args = ("send", sessions[root], f"round {r}", "--json")
            seconds[root].append(timed(lambda root=root, args=args: freshline(root, *args)))
    return seconds


def scans(root: Path) -> tuple[float, float]:
    """Best seconds of a no-change `freshline scan` and of `git status --porcelain`, taking
    turns."""
    git = ["git", "status", "--porcelain"]
    subprocess.run(git, cwd=root, env=GIT_ENV, check=True, capture_output=True)  # warm
    status, scan = [], []
    for _ in range(ROUNDS):
        status.append(timed(lambda: subprocess.run(git, cwd=root, env=GIT_ENV, check=True,
                                                   capture_output=True)))
        scan.append(timed(lambda: freshline(root, "scan")))
    return min(scan), min(status)


def main() -> None:
    large = 10_000 if "--quick" in sys.argv else 50_000
    with tempfile.TemporaryDirectory() as tmp:
        roots = {n: Path(tmp).resolve() / f"ws{n}" for n in (1000, large)}
        private_user(Path(tmp))
        try:
            for n, root in roots.items():
                started = time.monotonic()
                root.mkdir()
                build(root, n)
                freshline(root, "scan")
                took = time.monotonic() - started
                print(f"{n:>6} files: checkout and first scan in {took:.0f} s")
            start_service(*roots.values())
            scan, status = scans(roots[large])
            print(f"  no-change scan ÷ git status --porcelain at {large // 1000}k: "
                  f"{scan / status:4.2f}  ({scan * 1000:.0f} ms vs {status * 1000:.0f} ms)  "
                  "(goal ≤ 1.5)")
            results = sends(list(roots.values()))
        finally:
            end_private_user()
    small, big = (statistics.median(results[roots[n]]) for n in (1000, large))
    print(f"  send after {CHANGES} changes: {big * 1000:.0f} ms at {large // 1000}k, "
          f"{small * 1000:.0f} ms at 1k (median of {ROUNDS})")
    print(f"  send {large // 1000}k ÷ send 1k: {big / small:4.2f}  (goal ≤ 1.5)")


if __name__ == "__main__":
    main()
