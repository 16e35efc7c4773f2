"""What the PostgreSQL store costs against SQLite, and how it bears concurrent writers.

Starts a PostgreSQL server of its own in a temp dir (as tests/pgserver.py does).
1. A send's bookkeeping (prepare + record + accept) after 10 changes with the watcher
   running, on two copies of one workspace of N files (bench/send.py's rounds): the store
   on PostgreSQL ÷ on SQLite (goal ≤ 2).
2. Flush throughput on one PostgreSQL store: 4 processes flushing a churning tree at once
   (each its own folder: a new note, an old one deleted, a flush) ÷ 1 process alone, in
   flushes per second (goal ≥ 0.8: no collapse under contention).
Usage: python bench/store.py [--quick]        (N = 2,000 and 100 flushes a writer;
                                                --quick: N = 500 and 40)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' server and flusher
from send import build, measure, watching  # noqa: E402  (bench/send.py, beside this file)
from tests.churn import FLUSHER  # noqa: E402
from tests.pgserver import PgServer, bench_server  # noqa: E402

from freshline.config import add_project, init_workspace, load_config  # noqa: E402
from freshline.store.location import ENV_VAR  # noqa: E402
from freshline.tracker import Tracker  # noqa: E402

WRITERS = 4
KEPT = 3
SEND = ("prepare", "record", "accept")


def send_seconds(root: Path) -> float:
    """The median send bookkeeping (seconds) on the folder project, watcher running."""
    with watching(root):
        figures = measure(root, "folder")
    return sum(figures[k] for k in SEND)


def flushes_per_second(server: PgServer, writers: int, flushes: int) -> float:
    """Flushes a second, all writers together, on a fresh store and workspace."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "ws"
        init_workspace(root)
        (root / "notes").mkdir()
        add_project(root, "p", ["notes"])
        Tracker(load_config(root)).scan()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", FLUSHER, str(root), f"w{i}",
                                   str(flushes), str(KEPT)], env=env, stdout=subprocess.PIPE)
                 for i in range(writers)]
        for p in procs:
            p.communicate()
            assert p.returncode == 0
        return writers * flushes / (time.perf_counter() - start)


def main() -> None:
    quick = "--quick" in sys.argv
    n, flushes = (500, 40) if quick else (2_000, 100)
    server = bench_server("bench/store.py")
    try:
        seconds = {}
        for backend in ("sqlite", "postgresql"):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp).resolve()
                build(root, n)
                if backend == "postgresql":
                    os.environ[ENV_VAR] = server.new_schema()
                seconds[backend] = send_seconds(root)
                os.environ.pop(ENV_VAR, None)
        print(f"send after 10 changes, watcher running, {n:,} files (median of rounds):")
        for backend, s in seconds.items():
            print(f"  {backend:10} {s * 1000:7.1f} ms")
        print(f"  PostgreSQL ÷ SQLite: {seconds['postgresql'] / seconds['sqlite']:.2f}"
              "  (goal ≤ 2)")
        os.environ[ENV_VAR] = server.new_schema()
        one = flushes_per_second(server, 1, flushes)
        os.environ[ENV_VAR] = server.new_schema()
        many = flushes_per_second(server, WRITERS, flushes)
        print(f"flush throughput on PostgreSQL ({flushes} flushes a writer, churning tree):")
        print(f"  1 writer {one:6.1f}/s, {WRITERS} writers {many:6.1f}/s: "
              f"{WRITERS} ÷ 1 = {many / one:.2f}  (goal ≥ 0.8)")
    finally:
        os.environ.pop(ENV_VAR, None)
        server.stop()


if __name__ == "__main__":
    main()
