"""What fitting blocks to a budget costs, against rendering them whole.

For updates of N changes (a checkout of N files, N created notes in 40 folders, and those
notes beside N/3 documents whose snapshots became ready) times `render_updates` with no
budget (the whole list, the baseline) and fitted to 9,000 characters (the hook's default,
measured as the hook prints it), the median of several rounds. Prints the fitted time ÷
the whole time per size (goal ≤ 3: a binary search renders a handful of times, each
render is linear, and unfolding what the room left allows adds a few renders more), the
fitted block's size and how many of the folders holding the changes it names.
Usage: python bench/blocks.py [--quick]        (sizes 1k, 10k, 50k; --quick: 1k and 10k)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from freshline.context import (
    Budget,
    Channel,
    DocumentInfo,
    Encoding,
    Meter,
    UpdatesInput,
    render_updates,
)
from freshline.materialize.status import DocStatus
from freshline.store.records import Change, ChangeKind

ROUNDS = 5
ROOT = "/home/u/vault"
HOOK = Budget(9_000, Channel.HOOK, Meter(87, Encoding.JSON_ASCII))


def checkout(n: int) -> UpdatesInput:
    paths = [f"src/pkg{i % 10}/mod{i // 10 % 10}/file{i // 100:04}.py" for i in range(n)]
    changes = [Change(ChangeKind.MODIFIED, p) for p in paths]
    detail = {"operation": "checkout", "from": "a" * 40, "to": "b" * 40, "paths": paths}
    git = Change(ChangeKind.GIT, "", detail=detail)
    return UpdatesInput.from_changes("code", ROOT, 1, 2, [*changes, git])


def notes(n: int) -> UpdatesInput:
    changes = [Change(ChangeKind.CREATED, f"notes/f{i % 40:02}/note {i:05}.md") for i in range(n)]
    return UpdatesInput("notes", ROOT, 1, 2, changes=changes)


def ready(n: int) -> UpdatesInput:
    docs = [DocumentInfo(f"papers/p{i:05}.pdf", DocStatus.READY, f".freshline/snapshots/{i}.md")
            for i in range(n // 3)]
    return replace(notes(n), ready_documents=tuple(docs))


def named(u: UpdatesInput, text: str) -> str:
    """How many of the folders holding `u`'s changes `text` names, of how many."""
    folders = {c.path.rpartition("/")[0] for c in u.changes if c.path}
    return f"{sum(f'{ROOT}/{f}/' in text for f in folders)}/{len(folders)} folders"


def median(run: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    sizes = (1_000, 10_000) if "--quick" in sys.argv else (1_000, 10_000, 50_000)
    for name, make in (("checkout", checkout), ("notes", notes), ("ready", ready)):
        for n in sizes:
            u = make(n)
            whole = median(lambda u=u: render_updates(u))
            fitted = median(lambda u=u: render_updates(u, HOOK))
            text = render_updates(u, HOOK) or ""
            print(f"{name:9} n={n:>6}: whole {whole * 1000:7.1f} ms, fitted {fitted * 1000:7.1f} ms"
                  f" -> ratio {fitted / whole:4.2f} (block {HOOK.meter.cost(text):,} of "
                  f"{HOOK.chars:,} chars, {named(u, text)})")


if __name__ == "__main__":
    main()
