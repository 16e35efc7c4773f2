"""What a new user types first, as whole processes, against an empty Python's start-up.

In a small workspace (one project), times each command as its own process, the best of
several runs, and prints it ÷ `python -c pass` measured in the same run:
  freshline --help                 the help typer printed last time, kept (and, for scale,
  freshline project add --help     typer's own: the first call after the cache is cleared)
  freshline project list
Run with PYTHONDONTWRITEBYTECODE=1, as agents' hooks and many shells see it; bytecode is
compiled first, as an installed package has it, and the autowatch is off.
Usage: python bench/first_commands.py [--quick]
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import freshline

PYTHON = sys.executable
FRESHLINE = str(Path(PYTHON).with_name("freshline"))


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """One run of a whole process, in seconds (SystemExit when it fails)."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.decode().strip()}")
    return took


def best_of(runs: int, args: list[str], cwd: Path, env: dict[str, str],
            cache: Path | None = None) -> float:
    """The fastest of `runs` runs; with `cache`, each run finds no help kept."""
    best = float("inf")
    for _ in range(runs):
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
        best = min(best, timed(args, cwd, env))
    return best


def main() -> None:
    runs = 5 if "--quick" in sys.argv else 20
    compileall.compile_dir(str(Path(freshline.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "notes").mkdir()
        (root / "notes" / "a.md").write_text("# a\n")
        (root / "freshline.toml").write_text('[projects.notes]\ninclude = ["notes"]\n')
        cache = root / "cache"
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_CURRENT_TEST")}
        env |= {"PYTHONDONTWRITEBYTECODE": "1", "FRESHLINE_AUTOWATCH": "0",
                "XDG_CACHE_HOME": str(cache), "COLUMNS": "80"}
        base = best_of(runs, [PYTHON, "-c", "pass"], root, env)
        print(f"python -c pass: {base * 1000:.1f} ms (best of {runs})")
        for words in (["--help"], ["project", "add", "--help"]):
            label = " ".join(["freshline", *words])
            typer = best_of(runs, [FRESHLINE, *words], root, env, cache)
            kept = best_of(runs, [FRESHLINE, *words], root, env)
            print(f"  {label:<30} kept {kept * 1000:6.1f} ms ÷ python -c pass: "
                  f"{kept / base:4.1f}   (typer's: {typer / base:4.1f}; goal ≤ 5)")
        listed = best_of(runs, [FRESHLINE, "project", "list"], root, env)
        print(f"  {'freshline project list':<30}      {listed * 1000:6.1f} ms ÷ python -c pass: "
              f"{listed / base:4.1f}   (goal ≤ 5)")


if __name__ == "__main__":
    main()
