"""What a flush and a change query cost with the change log as it is, against another
freshline (e.g. `main`) measured in the same run.

The change log's cap decides how many rows a busy project keeps (and compaction now counts
what it drops instead of deleting it), so this times, each at its version's own default
`change_log_cap`, one round of a send's tracker work: 10 files edited, a hinted flush of
them (logging, compaction), and `changes_since` of the epoch before (coalescing, the net
check). Two logs: `fresh` (a few rows) and `full` (filled to the cap, so every flush
compacts). The two versions run in turn in their own processes, so the machine's drift
hits both alike, and each round is timed by the CPU time it took (the machine is shared:
wall time mostly says what else ran). Prints each version's median per log and the ratio
this checkout ÷ baseline (goal ≤ 1.10).

Usage: python bench/changelog.py BASELINE_SRC [--quick]
  BASELINE_SRC is the `src` folder of the other freshline, e.g. from
  `git archive main src | tar -x -C /tmp/main` → /tmp/main/src.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
FILES = 1_000  # the project's notes; each flush edits 10 of them
CHANGES = 10

WORKER = r"""
import json, sys, time
from pathlib import Path
from freshline.config import load_config
from freshline.store import ProjectState
from freshline.store.records import Change, ChangeKind
from freshline.tracker import Tracker

root, fill, rounds = Path(sys.argv[1]), sys.argv[2] == "full", int(sys.argv[3])
tracker = Tracker(load_config(root))
tracker.scan()
cap = tracker.config.workspace.change_log_cap
if fill:  # the log at its cap: rows of earlier epochs, as a long-lived project has them
    state = tracker.store.project_state("p")
    per = 100
    with tracker.store.write():
        for epoch in range(1, cap // per + 1):
            rows = [Change(ChangeKind.MODIFIED, f"n/{(epoch * per + i) % 1000}.md")
                    for i in range(per)]
            tracker.store.log_append("p", epoch, rows)
        tracker.store.project_put(ProjectState("p", cap // per, 0, state.signature,
                                               state.patterns))
seconds = []
for r in range(rounds):
    before = tracker.epoch("p")
    edited = [f"n/{(r * 10 + i) % 1000}.md" for i in range(10)]
    for rel in edited:
        (root / rel).write_text(f"round {r} edit\n")
    start = time.process_time()
    tracker.scan(edited)
    answer = tracker.changes_since("p", before)
    seconds.append(time.process_time() - start)
    assert len(answer.changes) == 10, answer
print(json.dumps({"cap": cap, "seconds": seconds}))
"""


def workspace(parent: Path, name: str) -> Path:
    """A workspace of `FILES` notes in one project (racily clean stamps: none)."""
    root = parent / name
    (root / "n").mkdir(parents=True)
    for i in range(FILES):
        path = root / "n" / f"{i}.md"
        path.write_text(f"note {i}\n")
        os.utime(path, (1_000_000_000, 1_000_000_000))
    (root / "freshline.toml").write_text('[projects.p]\ninclude = ["n"]\n')
    (root / ".freshline").mkdir()
    return root


def run(src: Path, root: Path, fill: str, rounds: int) -> tuple[int, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(src), "CI": "1"}
    done = subprocess.run([sys.executable, "-c", WORKER, str(root), fill, str(rounds)],
                          env=env, check=True, capture_output=True, text=True)
    out = json.loads(done.stdout)
    return int(out["cap"]), [float(s) for s in out["seconds"]]


def main() -> None:
    if len(sys.argv) < 2 or not Path(sys.argv[1], "freshline").is_dir():
        sys.exit(__doc__)
    baseline = Path(sys.argv[1]).resolve()
    quick = "--quick" in sys.argv
    repeats, rounds = (3, 10) if quick else (7, 20)
    with tempfile.TemporaryDirectory() as tmp:
        for fill in ("fresh", "full"):
            times: dict[str, list[float]] = {"this": [], "baseline": []}
            caps: dict[str, int] = {}
            for n in range(repeats):  # in turn, each in a workspace of its own
                for label, src in (("this", HERE), ("baseline", baseline)):
                    root = workspace(Path(tmp), f"{fill}-{label}-{n}")
                    caps[label], seconds = run(src, root, fill, rounds)
                    times[label] += seconds
            this, base = (statistics.median(times[k]) for k in ("this", "baseline"))
            print(f"{fill:5} log: this {this * 1000:6.2f} ms (cap {caps['this']:,}), "
                  f"baseline {base * 1000:6.2f} ms (cap {caps['baseline']:,}) "
                  f"-> ratio {this / base:4.2f}")


if __name__ == "__main__":
    main()
