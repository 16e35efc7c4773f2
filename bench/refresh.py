"""Refresh cost: a refreshing turn (prepare_turn + commit_turn) ÷ plain git on the same commits.

A checkout of N files (10k; --quick: 1k) and an isolated conversation with one agent edit;
each round the target moves 100 commits ahead, then the baseline (`git merge-tree
--write-tree` + `git commit-tree` for the head and the new target), freshline's refreshing
turn (the model answers without writing files, recorded as `agent.runtime` records it: the
answer's tree is the turn's), and `git merge` in a plain checkout of the same head (the
same work on disk: check the files, merge, update the files and the index, commit) run on
the same commits. Prints the median times and both ratios (goals: ≤ 2 against plumbing,
≤ 1 against `git merge`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from freshline.conversation import Author, Conversations, Event, Mode

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull,
    "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b",
}


def git(root: Path, *args: str, input: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=root, input=input, capture_output=True,
                          env=ENV, check=True)
    return proc.stdout.decode().strip()


def _file(path: str, body: str) -> str:
    return f"M 100644 inline {path}\ndata {len(body.encode())}\n{body}"


def build(root: Path, files: int, rounds: int, ahead: int) -> list[str]:
    """A repository of `files` files on main, then `rounds` × `ahead` commits each editing
    one file; returns the commit at the end of each round."""
    git(root, "init", "-q", "-b", "main")
    lines = ["commit refs/heads/main", "mark :1", "committer b <b@b> 1700000000 +0000",
             "data 4", "base"]
    lines += [_file(f"src/d{i // 100}/f{i}.txt", f"{i}\n") for i in range(files)]
    for n in range(rounds * ahead):
        lines += [f"commit refs/heads/upstream\nmark :{n + 2}",
                  f"committer b <b@b> {1700000001 + n} +0000", "data 2", "up",
                  f"from :{n + 1}",
                  _file(f"src/d{(n * 7919) % files // 100}/f{(n * 7919) % files}.txt",
                        f"upstream {n}\n")]
    lines += ["done", ""]
    git(root, "fast-import", "--quiet", "--done", "--export-marks=.git/marks",
        input="\n".join(lines).encode())
    ids = dict(line.split() for line in (root / ".git" / "marks").read_text().splitlines())
    return [ids[f":{(r + 1) * ahead + 1}"] for r in range(rounds)]


def cpu() -> float:
    """CPU seconds used so far by this process and the git processes it waited for."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn, cpu_times: list[float] | None = None) -> float:
    """Wall seconds of `fn()`; its CPU seconds appended to `cpu_times` when given."""
    start, used = time.perf_counter(), cpu()
    fn()
    if cpu_times is not None:
        cpu_times.append(cpu() - used)
    return time.perf_counter() - start


def setup(root: Path) -> tuple[Conversations, Path]:
    """An isolated conversation with one agent edit, and a plain checkout of the same head."""
    convs = Conversations(root)
    convs.open("bench", Mode.ISOLATED)
    pending = convs.prepare_turn("bench", "edit")
    (convs.worktree("bench") / "src/agent.txt").write_text("agent edit\n")
    convs.commit_turn(pending, [Event(Author.ASSISTANT, "edited")])
    plain = root.parent / "plain"
    git(root, "worktree", "add", "-q", "--detach", str(plain), convs.head("bench"))
    return convs, plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k files instead of 10k")
    opts = parser.parse_args()
    files, rounds, ahead = (1000 if opts.quick else 10_000), 11, 100
    times: dict[str, list[float]] = {"baseline": [], "prepare": [], "commit": [], "merge": []}
    cpu_times: dict[str, list[float]] = {"turn": [], "merge": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        tips = build(root, files, rounds, ahead)
        convs, plain = setup(root)
        for tip in tips:
            git(root, "update-ref", "refs/heads/main", tip)
            head = convs.head("bench")

            def baseline(head: str = head, tip: str = tip) -> None:
                tree = git(root, "merge-tree", "--write-tree", head, tip)
                git(root, "commit-tree", tree, "-p", head, "-p", tip, "-m", "merge")

            times["baseline"].append(timed(baseline))
            used = cpu()
            start = time.perf_counter()
            turn = convs.prepare_turn("bench", "next")
            times["prepare"].append(time.perf_counter() - start)
            assert turn.refresh is not None and turn.refresh.to == tip
            answer = Event(Author.ASSISTANT, "ok", tree=turn.tree)
            times["commit"].append(timed(
                lambda turn=turn, answer=answer: convs.commit_turn(turn, [answer])))
            cpu_times["turn"].append(cpu() - used)
            times["merge"].append(timed(
                lambda tip=tip: git(plain, "merge", "-q", "--no-edit", tip), cpu_times["merge"]))
    ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
    cpu_ms = {name: statistics.median(values) * 1000 for name, values in cpu_times.items()}
    mine = ms["prepare"] + ms["commit"]
    print(f"refresh bench: {files} files, target {ahead} commits ahead, {rounds} rounds (median)")
    print(f"  baseline git merge-tree + commit-tree:  {ms['baseline']:7.1f} ms")
    print(f"  freshline prepare_turn + commit_turn:   {mine:7.1f} ms "
          f"(prepare {ms['prepare']:.1f}, commit {ms['commit']:.1f}; cpu {cpu_ms['turn']:.1f})")
    print(f"  `git merge` in a checkout:              {ms['merge']:7.1f} ms "
          f"(cpu {cpu_ms['merge']:.1f})")
    print(f"  ratio vs baseline (goal <= 2): {mine / ms['baseline']:.2f}")
    print(f"  ratio vs git merge in a checkout (goal <= 1): {mine / ms['merge']:.2f} "
          f"(cpu time: {cpu_ms['turn'] / cpu_ms['merge']:.2f})")


if __name__ == "__main__":
    sys.exit(main())
