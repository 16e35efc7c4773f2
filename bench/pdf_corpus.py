"""Check: every PDF of a real corpus converts, or fails with a reason; none crashes.

Runs the materializer as freshline runs it (worker processes, the default time and memory
limits) over every `*.pdf` under CORPUS (py-pdf/sample-files is the one this was written
for: broken, encrypted, scanned and odd files on purpose). Prints each file's outcome and
a tally; exits 1 when a worker crashed or a failure's reason is a converter's own error
(`TypeError: …`), which means a bug rather than a bad file.

Usage: python bench/pdf_corpus.py CORPUS (without one it says it skipped, for `make bench`)
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.docgen import entry  # noqa: E402

from freshline.materialize import Materializer  # noqa: E402

BUG = re.compile(r"^(?:[A-Z]\w*(?:Error|Exception)|worker crashed)\b")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, help="a folder of PDFs")
    args = parser.parse_args()
    if args.corpus is None:
        print("pdf_corpus: skipped (pass a folder of PDFs, such as py-pdf/sample-files)")
        return
    pdfs = sorted(args.corpus.rglob("*.pdf"))
    if not pdfs:
        sys.exit(f"pdf_corpus: no PDF under {args.corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        names = []
        for n, pdf in enumerate(pdfs):
            name = f"{n:03}-{pdf.name}"
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pdf, root / name)
            names.append(name)
        start = time.perf_counter()
        with Materializer(root, Path(tmp) / "data") as materializer:
            result = materializer.ensure("corpus", 1, [entry(root, name) for name in names])
        seconds = time.perf_counter() - start
    tally: Counter[str] = Counter()
    for name in names:
        reason = result.failures.get(name)
        kind = "converted" if reason is None else "BUG" if BUG.match(reason) else "failed"
        tally[kind] += 1
        print(f"{kind:<10}{name}" + (f": {reason}" if reason else ""))
    counts = ", ".join(f"{n} {kind}" for kind, n in tally.items())
    print(f"{len(names)} PDFs in {seconds:.1f} s: {counts}")
    sys.exit(1 if tally["BUG"] else 0)


if __name__ == "__main__":
    main()
