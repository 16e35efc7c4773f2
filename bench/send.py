"""How the cost of one send's bookkeeping grows with the workspace.

With the watcher running in a thread, makes 10 file changes in the project, then times
`prepare` + `record` + `accept` of a turn, as a send makes them around the model call (the
median of several rounds). Two projects per size:
  folder   a fixed 1k-file folder inside a workspace of N files (the rest out of scope)
  all      the whole workspace (`**`)
and, for attribution, `files_in_scope` alone. Prints, per project, the figure at the
large size ÷ the figure at 1k (goal ≤ 2).
Usage: python bench/send.py [--quick]        (sizes 1k and 100k; --quick: 1k and 10k)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from freshline.config import load_config
from freshline.conversation import Author, Event
from freshline.session import PreparedTurn, SessionManager
from freshline.tracker.hints import watcher_alive
from freshline.tracker.watcher import Watcher

ROUNDS = 5
SEND = ("prepare", "record", "accept")
CHANGES = 10
FOLDER_FILES = 1000


def build(root: Path, n: int) -> None:
    """`p/` holds FOLDER_FILES notes; the rest of the N files live elsewhere."""
    for i in range(n):
        top = "p" if i < FOLDER_FILES else f"d{i % 100}"
        d = root / top / f"s{(i // 100) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"note{i}.md").write_text(f"# note {i}\n\nsome text\n")
    (root / "freshline.toml").write_text(
        '[projects.folder]\ninclude = ["p"]\n\n[projects.all]\ninclude = ["**"]\n'
    )
    (root / ".freshline").mkdir()


def send(m: SessionManager, session_id: str, message: str) -> tuple[PreparedTurn, list[float]]:
    """One send's bookkeeping; the seconds of prepare, record and accept."""
    marks = [time.perf_counter()]
    turn = m.prepare(session_id, message)
    marks.append(time.perf_counter())
    turn.record([Event(Author.ASSISTANT, "ok")])
    marks.append(time.perf_counter())
    turn.accept()
    marks.append(time.perf_counter())
    return turn, [b - a for a, b in zip(marks, marks[1:], strict=False)]


def measure(root: Path, project: str) -> dict[str, float]:
    """Median seconds of prepare, record, accept and files_in_scope after 10 changes."""
    m = SessionManager(load_config(root))
    try:
        s = m.new(project)
        send(m, s.id, "first")
        prepare, record, accept, scope = [], [], [], []
        for r in range(ROUNDS):
            for i in range(CHANGES):
                (root / "p" / f"{project}-round{r}-{i}.md").write_text(f"change {r} {i}\n")
            turn, seconds = send(m, s.id, f"round {r}")
            prepare.append(seconds[0])
            record.append(seconds[1])
            accept.append(seconds[2])
            assert turn.updates is not None and f"{project}-round{r}-9.md" in turn.updates
            start = time.perf_counter()
            m.tracker.files_in_scope(project)
            scope.append(time.perf_counter() - start)
        return {
            "prepare": statistics.median(prepare),
            "record": statistics.median(record),
            "accept": statistics.median(accept),
            "files_in_scope": statistics.median(scope),
        }
    finally:
        m.close()


def run_size(n: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        build(root, n)
        watcher = Watcher(load_config(root))
        thread = threading.Thread(target=watcher.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 600
            while not watcher_alive(watcher.tracker.store) and time.monotonic() < deadline:
                time.sleep(0.05)
            return {project: measure(root, project) for project in ("folder", "all")}
        finally:
            watcher.stop()
            thread.join()


def main() -> None:
    quick = "--quick" in sys.argv
    small, large = 1000, 10_000 if quick else 100_000
    results = {n: run_size(n) for n in (small, large)}
    print(f"prepare + record + accept after {CHANGES} changes, watcher running "
          f"(median of {ROUNDS})")
    for project in ("folder", "all"):
        for n in (small, large):
            r = results[n][project]
            print(
                f"  {project:6} {n:>7} files: prepare {r['prepare'] * 1000:7.1f} ms, "
                f"record {r['record'] * 1000:5.1f} ms, accept {r['accept'] * 1000:5.1f} ms, "
                f"files_in_scope {r['files_in_scope'] * 1000:7.1f} ms"
            )
        a, b = results[small][project], results[large][project]
        ratio = sum(b[k] for k in SEND) / sum(a[k] for k in SEND)
        print(f"  {project:6} {large // 1000}k ÷ 1k: {ratio:.2f}  (goal ≤ 2)")


if __name__ == "__main__":
    main()
