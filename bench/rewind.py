"""Rewind cost: `rewind --code` of an isolated session ÷ plain git doing the same work.

A checkout of N files (10k; --quick: 1k) and an isolated conversation of T turns (10), each
a tool editing E files (20) of its worktree, recorded as `agent.runtime` records them.
Each round rewinds the files to where turn 1 began, then to where the last turn began (a
redo), alternately: freshline's `plan` + `apply` (snapshot of the worktree, the paths
changed and who changed them, the commit, the journal, the move, the ref), against the
baseline in a plain checkout of the same commits: `git read-tree -m -u` to the same tree,
`git commit-tree` and `git update-ref` (moving the files and recording a commit, nothing
more). Prints the medians and the ratio (goal ≤ 3: a rewind also checks the worktree and
works out who changed what). Also the transcript view of a 500-turn conversation ÷ reading
its log, the cost `views.py` adds to every replay (goal ≤ 1.05).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from refresh import build, cpu, git, timed

from freshline.conversation import Author, Conversations, Event, Mode, views
from freshline.conversation import rewind as rewinding
from freshline.conversation.events import RewindMode


def converse(convs: Conversations, turns: int, edits: int, files: int) -> None:
    """`turns` turns, each with a tool event that edited `edits` files of the worktree."""
    for t in range(turns):
        pending = convs.prepare_turn("bench", f"turn {t + 1}")
        tree = convs.worktree("bench")
        for e in range(edits):
            i = (t * edits + e) * 7919 % files
            (tree / f"src/d{i // 100}/f{i}.txt").write_text(f"agent {t} {e}\n")
        tool = Event(Author.TOOL, "edited", tool="edit",
                     tree=convs.snapshot_event(pending, ()))
        convs.commit_turn(pending, [tool, Event(Author.ASSISTANT, "ok")])


def rewind_once(convs: Conversations, turn: str) -> str:
    """freshline's rewind of the files to where `turn` began; the new head's tree."""
    repo = convs.repo_of("bench")
    with convs.rewinding("bench"):
        planned = rewinding.plan(repo, "bench", turn, RewindMode.CODE)
        rewinding.apply(repo, planned)
    return planned.tree


def view_ratio(root: Path) -> float:
    """Reading a long conversation's transcript view ÷ reading its log (from git, by a
    fresh reader: no chain cached): the log's median plus the view's own, over the log's."""
    convs = Conversations(root)
    convs.open("long", Mode.LIVE)
    for t in range(500):
        pending = convs.prepare_turn("long", f"turn {t}")
        convs.commit_turn(pending, [Event(Author.ASSISTANT, "ok")])
    log = [timed(lambda: Conversations(root).log("long")) for _ in range(9)]
    events = convs.log("long")
    view = [timed(lambda: views.transcript(events)) for _ in range(9)]
    return (statistics.median(log) + statistics.median(view)) / statistics.median(log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k files instead of 10k")
    opts = parser.parse_args()
    files, turns, edits, rounds = (1000 if opts.quick else 10_000), 10, 20, 9
    times: dict[str, list[float]] = {"rewind": [], "baseline": []}
    cpu_times: dict[str, list[float]] = {"rewind": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        build(root, files, 1, 1)
        convs = Conversations(root)
        convs.open("bench", Mode.ISOLATED)
        converse(convs, turns, edits, files)
        plain = root.parent / "plain"
        git(root, "worktree", "add", "-q", "--detach", str(plain), convs.head("bench"))
        for r in range(rounds):
            turn = "1" if r % 2 == 0 else str(turns)
            start, used = time.perf_counter(), cpu()
            tree = rewind_once(convs, turn)
            times["rewind"].append(time.perf_counter() - start)
            cpu_times["rewind"].append(cpu() - used)

            def baseline(tree: str = tree) -> None:
                git(plain, "read-tree", "-m", "-u", tree)
                head = git(plain, "rev-parse", "HEAD")
                commit = git(plain, "commit-tree", tree, "-p", head, "-m", "rewind")
                git(plain, "update-ref", "HEAD", commit)

            times["baseline"].append(timed(baseline, cpu_times["baseline"]))
        ratio = view_ratio(Path(tmp) / "notes")
    ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
    cpu_ms = {name: statistics.median(values) * 1000 for name, values in cpu_times.items()}
    print(f"rewind bench: {files} files, {turns} turns of {edits} edits, {rounds} rounds "
          "(median)")
    print(f"  baseline read-tree -m -u + commit-tree + update-ref: {ms['baseline']:7.1f} ms "
          f"(cpu {cpu_ms['baseline']:.1f})")
    print(f"  freshline rewind --code (plan + apply):             {ms['rewind']:7.1f} ms "
          f"(cpu {cpu_ms['rewind']:.1f})")
    print(f"  ratio vs baseline (goal <= 3): {ms['rewind'] / ms['baseline']:.2f} "
          f"(cpu time: {cpu_ms['rewind'] / cpu_ms['baseline']:.2f})")
    print(f"  transcript view of 500 turns vs reading the log (goal <= 1.05): {ratio:.3f}")


if __name__ == "__main__":
    sys.exit(main())
