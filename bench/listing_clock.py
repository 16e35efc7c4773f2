"""What reading the file system's clock adds to a fresh workspace's first listing.

A listing dates itself by the file system's own clock (`listing.fs_clock`: a stamp in
`.freshline/` touched until its ctime ticks). Prints, over a vault of 20,000 notes at
rest, the median of each in-process figure and the ratio:

  fs_clock ÷ listing      the clock ÷ `Scanner.listed` of the whole vault (the clock
                          included, as a first hook call runs it)       goal ≤ 0.01
  fs_clock ÷ wall clock   the clock ÷ `time.time_ns()` (what it replaced)

Usage: python bench/listing_clock.py [--quick]   (--quick: 2,000 notes)
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from freshline.store import Store
from freshline.tracker.listing import fs_clock
from freshline.tracker.scan import Scanner

NOTES = 2_000 if "--quick" in sys.argv else 20_000
AT_REST = time.time() - 3600


def build(root: Path) -> None:
    for i in range(NOTES):
        folder = root / f"d{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"note{i}.md"
        path.write_text(f"# note {i}\n\ntext\n")
        os.utime(path, (AT_REST, AT_REST))
    (root / ".freshline").mkdir()


def median_s(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root)
        store = Store(root / ".freshline")
        scanner = Scanner(root, store)

        def listing() -> object:
            now = fs_clock(str(root))
            assert now is not None, "this file system's clock did not tick"
            return scanner.listed(now)

        clock = median_s(lambda: fs_clock(str(root)), 2_000)
        listed = median_s(listing, 15)
        wall = median_s(time.time_ns, 2_000)
        store.close()
    print(f"{NOTES} notes")
    print(f"fs_clock ÷ listing     {clock / listed:8.5f}  "
          f"({clock * 1e6:.1f} µs ÷ {listed * 1000:.1f} ms)  goal ≤ 0.01")
    print(f"fs_clock ÷ wall clock  {clock / wall:8.0f}  "
          f"({clock * 1e6:.1f} µs ÷ {wall * 1e9:.0f} ns)")


if __name__ == "__main__":
    main()
