"""Benchmark: PDF snapshots against READoc's ground-truth Markdown, beside the anchors.

READoc (github icip-cas/READoc) holds real PDFs, each with the Markdown it was made from
(`<corpus>/**/pdf/NAME.pdf` beside `<corpus>/**/markdown/NAME.md`). Every converter is
scored in the same run on the same files:

  heading recall   the share of the truth's headings (outside code fences) that the
                   output has as headings too (words compared, case and marks aside;
                   a similarity of 0.85 counts)
  words F1         bag-of-words F1 of the output's words against the truth's, per file,
                   averaged (markup and HTML comments, freshline's page lines, aside)
  markers          U+FFFE, U+0002 and soft hyphens left in the output, in all
  seconds          CPU seconds converting every file once, the least of --repeat rounds
                   (freshline's two converters take turns in each round; an anchor is
                   timed once, in its own process, by the wall clock)

The rows: freshline's converter; today's plain pypdfium2 extraction (the converter
before version 2: each page's text as pdfium gives it), which is the time baseline
(goal: freshline <= 2x); and the anchors, pymupdf4llm and markitdown, when
`--anchors PYTHON` names an interpreter that has them (a throwaway venv: both are
never freshline's dependencies; pymupdf is AGPL). Goals: heading recall >= the best
anchor's, words F1 >= 0.97 x the best, 0 markers.

Usage: python bench/readoc.py CORPUS [--anchors /tmp/anchors/bin/python] [--repeat 3]
(without CORPUS it says it skipped, for `make bench`)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from freshline.materialize.converters import Limits  # noqa: E402
from freshline.materialize.converters.pdf import PdfConverter  # noqa: E402

MARKERS = ("\ufffe", "\x02", "\u00ad")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
WORD = re.compile(r"\w+")
MATCH = 0.85
ANCHORS = """
import json, sys, time
names = sys.argv[2:]
out = {}
if sys.argv[1] == "pymupdf4llm":
    import pymupdf4llm
    convert = lambda p: pymupdf4llm.to_markdown(p, show_progress=False)
else:
    from markitdown import MarkItDown
    engine = MarkItDown()
    convert = lambda p: engine.convert(p).text_content
start = time.perf_counter()
for name in names:
    try:
        out[name] = convert(name)
    except Exception as exc:
        out[name] = ""
        print(f"{name}: {exc}", file=sys.stderr)
print(json.dumps({"seconds": time.perf_counter() - start, "texts": out}))
"""


def corpus(root: Path) -> list[tuple[Path, Path]]:
    """Each PDF with its ground-truth Markdown."""
    pairs = []
    for pdf in sorted(root.rglob("pdf/*.pdf")):
        truth = pdf.parent.parent / "markdown" / (pdf.stem + ".md")
        if truth.is_file():
            pairs.append((pdf, truth))
    return pairs


def plain(path: Path) -> str:
    """Today's plain extraction: pdfium's text of each page under a page header."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    pages = []
    for index in range(len(document)):
        page = document[index]
        textpage = page.get_textpage()
        pages.append(f"## Page {index + 1}\n\n" + textpage.get_text_range().replace("\r\n", "\n"))
        textpage.close()
        page.close()
    document.close()
    return "\n\n".join(pages)


def freshline(path: Path) -> str:
    """freshline's PDF converter, in this process."""
    return PdfConverter().convert(path, Limits())


def headings(markdown: str) -> list[str]:
    """The normalized text of each heading outside code fences."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.append(_normal(match.group(1)))
    return [h for h in found if h]


def _normal(text: str) -> str:
    return " ".join(WORD.findall(text.lower().replace("_", " ")))


def heading_hits(truth: list[str], output: list[str]) -> int:
    """How many of the truth's headings the output has, each output heading used once."""
    left = list(output)
    hits = 0
    for wanted in truth:
        best = max(left, key=lambda h: SequenceMatcher(None, wanted, h).ratio(), default=None)
        if best is not None and SequenceMatcher(None, wanted, best).ratio() >= MATCH:
            left.remove(best)
            hits += 1
    return hits


def words_f1(truth: str, output: str) -> float:
    """Bag-of-words F1 of `output` against `truth`."""
    want = Counter(WORD.findall(COMMENT.sub(" ", truth).lower().replace("_", " ")))
    got = Counter(WORD.findall(COMMENT.sub(" ", output).lower().replace("_", " ")))
    common = sum((want & got).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def timed(
    converters: dict[str, Callable[[Path], str]], pdfs: list[Path], repeat: int
) -> dict[str, tuple[float, dict[str, str]]]:
    """Each converter's least CPU time over `repeat` rounds (the converters take turns
    within a round, so a busy spell of a shared machine weighs on each alike), and its
    texts."""
    best = dict.fromkeys(converters, float("inf"))
    texts: dict[str, dict[str, str]] = {}
    for _ in range(repeat):
        for name, convert in converters.items():
            start = time.process_time()
            texts[name] = {str(pdf): convert(pdf) for pdf in pdfs}
            best[name] = min(best[name], time.process_time() - start)
    return {name: (best[name], texts[name]) for name in converters}


def anchor(python: str, name: str, pdfs: list[Path]) -> tuple[float, dict[str, str]]:
    """An anchor's texts and time, converted by `python` in a process of its own."""
    done = subprocess.run([python, "-c", ANCHORS, name, *map(str, pdfs)],
                          capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    return answer["seconds"], answer["texts"]


def score(pairs: list[tuple[Path, Path]], texts: dict[str, str]) -> tuple[float, float, int]:
    """Heading recall (over all files), mean words F1 and markers left."""
    hits = total = markers = 0
    f1s = []
    for pdf, truth_path in pairs:
        truth, output = truth_path.read_text(encoding="utf-8"), texts.get(str(pdf), "")
        wanted = headings(truth)
        hits += heading_hits(wanted, headings(output))
        total += len(wanted)
        f1s.append(words_f1(truth, output))
        markers += sum(output.count(m) for m in MARKERS)
    return hits / max(total, 1), sum(f1s) / max(len(f1s), 1), markers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, help="READoc's checkout (or its data/)")
    parser.add_argument("--anchors", help="a python that has pymupdf4llm and markitdown")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--save", type=Path, help="write freshline's Markdown here")
    args = parser.parse_args()
    if args.corpus is None:
        print("readoc: skipped (pass the path of READoc's checkout)")
        return
    pairs = corpus(args.corpus)
    if not pairs:
        sys.exit(f"readoc: no pdf/NAME.pdf beside markdown/NAME.md under {args.corpus}")
    pdfs = [pdf for pdf, _ in pairs]
    rows = timed({"plain pypdfium2 (v1)": plain, "freshline (v2)": freshline}, pdfs, args.repeat)
    if args.anchors:
        for name in ("pymupdf4llm", "markitdown"):
            rows[name] = anchor(args.anchors, name, pdfs)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        for pdf in pdfs:
            (args.save / (pdf.stem + ".md")).write_text(rows["freshline (v2)"][1][str(pdf)])
    baseline = rows["plain pypdfium2 (v1)"][0]
    print(f"READoc: {len(pairs)} PDFs")
    header = ("converter", "headings", "words F1", "markers", "seconds", "x plain")
    print("{:<22}{:>9}{:>10}{:>9}{:>9}{:>9}".format(*header))
    for name, (seconds, texts) in rows.items():
        recall, f1, markers = score(pairs, texts)
        ratio = seconds / baseline
        print(f"{name:<22}{recall:>9.3f}{f1:>10.3f}{markers:>9}{seconds:>9.2f}{ratio:>9.2f}")


if __name__ == "__main__":
    main()
