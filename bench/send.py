"""How the cost of one send's bookkeeping grows with the workspace.

With the watcher running in a thread, makes 10 file changes in the project, then times
`prepare` + `record` + `accept` of a turn, as a send makes them around the model call (the
median of several rounds). Two projects per size:
  folder   a fixed 1k-file folder inside a workspace of N files (the rest out of scope)
  all      the whole workspace (`**`)
and, for attribution, `files_in_scope` alone. Prints, per project, the figure at the
large size ÷ the figure at 1k (goal ≤ 2).

The read ledger's cost, same run: on the folder project, a session that has read all of
`p/` (another session wrote a tenth of it) sends rounds of 5 edits to files it read and 5
new files, with the ledger on and off in turn. Prints the median with ÷ without, and,
since that ratio moves by ±10 % with the load of a shared machine, also the time spent in
the ledger itself (its queries and provenance, timed inside the sends with it on) as a
share of a send without it (goal < 5 %).
The secret scan's cost, same run: on the folder project, rounds of 10 edited files (each
about 2 KB of code, one in ten holding a key) with the scan on and off in turn; prints
the medians and the time spent in the scan itself (`Withholder.text` and
`Withholder.tree_content`: reading the changed files and scanning them, the blocks and
the commit messages), as a share of a send without it (goal ≤ 5 %).
Usage: python bench/send.py [--quick]        (sizes 1k and 100k; --quick: 1k and 10k)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from measure import watching

from freshline.config import load_config
from freshline.conversation import Author, Event
from freshline.session import PreparedTurn, SessionManager
from freshline.store import LedgerEntry, LedgerKind
from freshline.tracker.hashing import blob_of
from freshline.withholding import KEEP, Withheld, Withholder

ROUNDS = 5
LEDGER_ROUNDS = 20  # per setting, alternating
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


def fill_ledger(m: SessionManager, root: Path, reader: str, writer: str) -> list[str]:
    """`reader` read every file of p/; `writer` wrote every tenth. The paths read."""
    paths = sorted(p.relative_to(root).as_posix() for p in (root / "p").rglob("*.md"))
    entries = [LedgerEntry(reader, p, LedgerKind.READ, blob_of(root / p) or "", 1)
               for p in paths]
    entries += [LedgerEntry(writer, p, LedgerKind.WRITE, e.blob, 1)
                for p, e in zip(paths[::10], entries[::10], strict=True)]
    m.store.ledger_put(entries)
    return paths


class Timed:
    """Wraps a function and adds up the seconds spent in it."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def measure_ledger(root: Path) -> dict[str, float]:
    """Median seconds of a send's bookkeeping with the ledger on and off, and the mean
    seconds per send spent in the ledger's own work."""
    m = SessionManager(load_config(root))
    try:
        s = m.new("folder")
        writer = m.new("folder", external_id="claude-code:folder:bench")
        send(m, s.id, "first")
        read = fill_ledger(m, root, s.id, writer.id)
        own = [Timed(m.ledger.paths), Timed(m.ledger.news), Timed(m.ledger.for_turn)]
        m.ledger.paths, m.ledger.news, m.ledger.for_turn = own  # type: ignore[method-assign]
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for r in range(2 * LEDGER_ROUNDS):
            on = r % 2 == 0
            m.ledger.enabled = on
            for i in range(5):
                (root / read[(r * 5 + i) * 7 % len(read)]).write_text(f"edited {r} {i}\n")
                (root / "p" / f"ledger-round{r}-{i}.md").write_text(f"new {r} {i}\n")
            turn, spent = send(m, s.id, f"ledger round {r}")
            assert turn.updates is not None and ("- you read" in turn.updates) == on
            seconds[on].append(sum(spent))
        return {"on": statistics.median(seconds[True]), "off": statistics.median(seconds[False]),
                "own": sum(t.seconds for t in own) / LEDGER_ROUNDS}
    finally:
        m.close()


CODE = "".join(f"def handler_{i}(request, key):\n    value = request.args.get(key)\n"
               f"    return {{'count': len(value), 'id': {i}}}\n" for i in range(20))
KEY = 'OPENAI_API_KEY = "sk-proj-Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1nOp3rSt5vWx7z"\n'


class Outer(Timed):
    """Timed, counting only the outermost of nested calls (tree_content calls text)."""

    depth = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if Outer.depth:
            return self.fn(*args, **kwargs)
        Outer.depth += 1
        try:
            return super().__call__(*args, **kwargs)
        finally:
            Outer.depth -= 1


def measure_scan(root: Path) -> dict[str, float]:
    """Median seconds of a send's bookkeeping with the scan on and off, and the mean
    seconds per send spent in the scan."""
    m = SessionManager(load_config(root))
    try:
        s = m.new("folder")
        send(m, s.id, "first")
        w = m.withholder
        on = (Outer(w.text), Outer(w.tree_content))
        off = (lambda text, *_a, **_k: Withheld(text), lambda *_a, **_k: KEEP)
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for r in range(2 * LEDGER_ROUNDS):
            scanning = r % 2 == 0
            w.text, w.tree_content = on if scanning else off  # type: ignore[method-assign]
            for i in range(CHANGES):
                body = CODE + (KEY if i == 0 else "") + f"# round {r}\n"
                (root / "p" / f"scan-{i}.py").write_text(body)
            _turn, spent = send(m, s.id, f"scan round {r}")
            seconds[scanning].append(sum(spent))
        assert isinstance(w, Withholder)
        return {"on": statistics.median(seconds[True]), "off": statistics.median(seconds[False]),
                "own": sum(t.seconds for t in on) / LEDGER_ROUNDS}
    finally:
        m.close()


def run_size(
    n: int,
) -> tuple[dict[str, dict[str, float]], dict[str, float], dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        build(root, n)
        with watching(root):
            sends = {project: measure(root, project) for project in ("folder", "all")}
            return sends, measure_ledger(root), measure_scan(root)


def main() -> None:
    quick = "--quick" in sys.argv
    small, large = 1000, 10_000 if quick else 100_000
    runs = {n: run_size(n) for n in (small, large)}
    results = {n: sends for n, (sends, _, _) in runs.items()}
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
    print(f"read ledger: prepare + record + accept, ledger on ÷ off, alternating "
          f"(median of {LEDGER_ROUNDS} each)")
    on_off("the ledger's", {n: ledger for n, (_, ledger, _) in runs.items()}, "< 5 %")
    print(f"secret scan: prepare + record + accept after {CHANGES} edited 2 KB files, scan on ÷ "
          f"off, alternating (median of {LEDGER_ROUNDS} each)")
    on_off("the scan's", {n: scan for n, (_, _, scan) in runs.items()}, "≤ 5 %")


def on_off(whose: str, figures: dict[int, dict[str, float]], goal: str) -> None:
    """Per size: the sends with and without a part, and the part's own work."""
    for n, f in figures.items():
        on, off, own = f["on"], f["off"], f["own"]
        print(f"  folder {n:>7} files: with {on * 1000:6.1f} ms, without {off * 1000:6.1f} ms: "
              f"{on / off:.3f}; {whose} own work {own * 1000:.2f} ms a send = "
              f"{own / off:.1%} of a send without it  (goal {goal})")


if __name__ == "__main__":
    main()
