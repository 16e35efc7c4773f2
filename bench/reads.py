"""What reading beneath the root and scanning every format cost, against main before it.

Issue 47 made every reader open a path a component at a time (`beneath`), read the
descriptor it checked and scan the bytes it read, and the live tree's screen read every
format (office documents' parts, UTF-16 text). The baseline is the same work done by the
code of commit BASELINE (main before the change), exported with `git archive` into a
temporary folder and run in its own process beside this checkout's, in turn (A B A B …),
on one generated workspace. Prints, new ÷ baseline (CPU-time ratios beside wall-time):

  read                 the agent's `read` of N notes 4 folders deep, per call
  search               one `search` over the whole workspace that matches nothing
  list                 `list` of every folder
  live tree            the first live tree of the workspace (every file through the screen),
                       notes only, and notes with office documents and UTF-16 texts

Usage: python bench/reads.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' document writers
from tests.docgen import write_docx, write_pptx, write_xlsx  # noqa: E402

BASELINE = "3b3e4e5"  # main before issue 47's reads
ROOT = Path(__file__).resolve().parents[1]
OPS = ("read", "search", "list", "tree")


def build(root: Path, notes: int, documents: int) -> None:
    """A workspace of `notes` notes 4 folders deep and `documents` office files and
    UTF-16 texts."""
    for i in range(notes):
        folder = root / "notes" / f"a{i % 10}" / f"b{i % 7}" / f"c{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i}.md").write_text(f"# note {i}\n\nsome words of note {i}\n" * 20)
    docs = root / "docs"
    docs.mkdir(parents=True)
    for i in range(documents):
        write_docx(docs / f"d{i}.docx", f"Doc {i}", ["one", "two"], [["k", "v"], ["a", "b"]])
        rows = [["name", "value"], *[[f"r{j}", j] for j in range(50)]]
        write_xlsx(docs / f"s{i}.xlsx", {"s": rows})
        write_pptx(docs / f"p{i}.pptx", [("Title", "body", "notes")])
        (docs / f"u{i}.txt").write_bytes(("a line of UTF-16 text\n" * 200).encode("utf-16"))
    (root / "freshline.toml").write_text(
        '[projects.notes]\ninclude = ["notes"]\n[projects.all]\ninclude = ["notes", "docs"]\n')
    (root / ".freshline").mkdir()


WORKER = r'''
import json, sys, time, resource, tempfile
from pathlib import Path
from freshline.agent import ToolCall, Toolbox
from freshline.config import load_config
from freshline.conversation.git import Git
from freshline.conversation.objects import sink
from freshline.conversation.trees import live_tree
from freshline.tracker import Tracker
from freshline.withholding import Withholder

root, op, project = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
config = load_config(root)
box = Toolbox(root)
notes = sorted(p.relative_to(root).as_posix() for p in (root / "notes").rglob("*.md"))
folders = sorted({str(Path(n).parent) for n in notes})
if op == "tree":
    tracker = Tracker(config)
    tracker.flush()
    entries = tracker.files_in_scope(project)

    repo = Path(tempfile.mkdtemp()) / "r.git"
start, cpu = time.perf_counter(), time.process_time()
if op == "read":
    for path in notes[:500]:
        box.run(ToolCall("c", "read", {"path": path}))
elif op == "search":
    box.run(ToolCall("c", "search", {"pattern": "zzqx"}))
elif op == "list":
    for folder in folders:
        box.run(ToolCall("c", "list", {"path": folder}))
else:
    git = Git(repo)
    git.run("init", "--bare", "--quiet", str(repo))
    with sink(git, packed=True, screen=Withholder()) as out:
        live_tree(git, entries, root, None, out)
print(json.dumps([time.perf_counter() - start, time.process_time() - cpu]))
'''


def baseline_source(tmp: Path) -> Path:
    """The baseline's `src`, exported from this checkout's history."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASELINE, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    return tmp / "src"


def worker(src: Path, root: Path, op: str, project: str) -> tuple[float, float]:
    """Wall and CPU seconds of one op in a process running the code of `src`."""
    done = subprocess.run([sys.executable, "-c", WORKER, str(root), op, project],
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin",
                               "HOME": str(root.parent)},
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the {op} worker failed:\n{done.stderr}")
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu


def ratio(new: Callable[[], tuple[float, float]], old: Callable[[], tuple[float, float]],
          runs: int) -> str:
    pairs = [(new(), old()) for _ in range(runs)]
    wall = statistics.median(a[0] / b[0] for a, b in pairs)
    cpu = statistics.median(a[1] / max(b[1], 1e-3) for a, b in pairs)
    new_ms = statistics.median(a[0] for a, _ in pairs) * 1000
    old_ms = statistics.median(b[0] for _, b in pairs) * 1000
    return f"{wall:5.2f}× (cpu {cpu:5.2f}×)  {new_ms:8.1f} ms ÷ {old_ms:8.1f} ms"


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old_src, new_src = baseline_source(tmp), ROOT / "src"
        root = tmp / "ws"
        started = time.perf_counter()
        build(root, 1000 if quick else 3000, 10 if quick else 30)
        print(f"workspace built in {time.perf_counter() - started:.1f} s; baseline {BASELINE}")
        cases = [("read (500 calls)", "read", "notes"), ("search", "search", "notes"),
                 ("list (every folder)", "list", "notes"), ("live tree, notes", "tree", "notes"),
                 ("live tree, with documents", "tree", "all")]
        for label, op, project in cases:
            line = ratio(lambda op=op, project=project: worker(new_src, root, op, project),
                         lambda op=op, project=project: worker(old_src, root, op, project),
                         runs)
            print(f"{label:28} {line}")


if __name__ == "__main__":
    main()
