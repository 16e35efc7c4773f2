"""Benchmark: materializing a corpus of PDFs against converting them in process.

The baseline is the PDF converter itself called in a loop in this process: what the
materializer adds (worker processes, the pickled text, snapshot files, probes) is the
question here; how the converter compares with pypdfium2's plain text is
`bench/readoc.py`'s. Prints, measured in one run on one generated corpus:
  first ensure (1 worker)  / in-process loop   goal <= 1.3
  first ensure (2 workers) / in-process loop   goal <= 0.7 on two cores
  second ensure (nothing changed) / first      goal <= 0.02

Each figure is the best of a few repetitions (fresh data dir each time), because a
shared machine's noise only ever adds time.

Usage: python bench/materialize.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.docgen import entry, write_pdf  # noqa: E402

from freshline.materialize import Limits, Materializer, MaterializeSettings  # noqa: E402
from freshline.materialize.converters.pdf import PdfConverter  # noqa: E402

WORDS = (
    "freshline keeps agents honest about files notes papers slides tables revisions "
    "snapshot fingerprint conversion worker memory limit timeout index epoch change"
).split()


def make_corpus(root: Path, documents: int, pages: int) -> list[str]:
    """Write `documents` PDFs of `pages` dense pages each; return their paths."""
    rng = random.Random(4)
    names = []
    for d in range(documents):
        body = [
            [" ".join(rng.choices(WORDS, k=14)) for _ in range(48)] for _ in range(pages)
        ]
        write_pdf(root / f"paper{d:03}.pdf", body)
        names.append(f"paper{d:03}.pdf")
    return names


def plain_loop(paths: list[Path]) -> float:
    """The baseline: convert every PDF in this process, nothing else."""
    converter, limits = PdfConverter(), Limits()
    start = time.perf_counter()
    for path in paths:
        converter.convert(path, limits)
    return time.perf_counter() - start


def best(repeats: int, measure: Callable[[int], float]) -> float:
    """The fastest of `repeats` measurements; measure gets the repetition number."""
    return min(measure(attempt) for attempt in range(repeats))


def timed_ensure(root: Path, data: Path, names: list[str], workers: int) -> float:
    """One ensure with a fresh Materializer (as a CLI call would make), in seconds."""
    sources = [entry(root, name) for name in names]
    start = time.perf_counter()
    with Materializer(root, data, MaterializeSettings(workers=workers)) as materializer:
        result = materializer.ensure("bench", 1, sources)
    elapsed = time.perf_counter() - start
    assert result.complete and not result.failures, result.failures
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small corpus (60 pages)")
    args = parser.parse_args()
    documents, pages, repeats = (6, 10, 2) if args.quick else (30, 12, 3)
    with tempfile.TemporaryDirectory() as tmp:
        root, data = Path(tmp) / "ws", Path(tmp) / "data"
        root.mkdir()
        names = make_corpus(root, documents, pages)
        paths = [root / name for name in names]
        plain_loop(paths[:1])  # warm the library and the page cache
        baseline = best(repeats, lambda _: plain_loop(paths))
        one = best(repeats, lambda n: timed_ensure(root, data / f"one{n}", names, workers=1))
        two = best(repeats, lambda n: timed_ensure(root, data / f"two{n}", names, workers=2))
        again = best(repeats, lambda _: timed_ensure(root, data / "two0", names, workers=2))
    print(f"corpus: {documents} PDFs, {documents * pages} pages")
    print(f"in-process converter loop     {baseline:8.3f} s")
    row = "{:<30}{:8.3f} s   ratio {:6.3f}  (goal <= {})"
    print(row.format("first ensure, 1 worker", one, one / baseline, 1.3))
    print(row.format("first ensure, 2 workers", two, two / baseline, 0.7))
    print(row.format("second ensure, nothing to do", again, again / two, 0.02))


if __name__ == "__main__":
    main()
