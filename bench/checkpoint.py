"""What a checkpoint of another agent's prompt costs (issue 43), against named baselines.

Builds a vault of 20,000 notes (200 folders of 100, files at rest: none racily clean), one
project over all of it, the watcher running in a thread, and answers Claude Code's hook
events in this process as the watcher serves them (`core.answer` over one `Warm`):

  a prompt after 3 files changed, with its checkpoint
      − the same prompt whose checkpoint only counts the turn (no tree, no commit),
        rounds taken in turn (A B A B …)                            goal ≤ 5 ms added
      (its files are written once the answer is out, as the service does once the reply
      is sent: that time is printed beside, not added)
  the first checkpoint of the vault (the whole project written)
      ÷ `git add -A && git write-tree` of the same files, a fresh repository each run,
        runs taken in turn                                          goal ≤ 1.0
  50 prompts with 3 edits each: the bytes their checkpoints add to freshline's repository
      ÷ the bytes the same 50 commits (`git add -A && git commit`) add to git's, by
        apparent size and by disk blocks                            goal ≤ 1.1

Each figure is a median; CPU time is printed beside the first two (the machine is shared).
Usage: python bench/checkpoint.py [--quick]      (--quick: 2,000 notes, fewer rounds)
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from measure import watching

from freshline.interfaces.hook.claude_code import ADAPTER
from freshline.interfaces.hook.core import Warm, answer
from freshline.interfaces.hook.protocol import HookOptions
from freshline.session import checkpoints
from freshline.session.base import SessionBase

QUICK = "--quick" in sys.argv
NOTES = 2_000 if QUICK else 20_000
ROUNDS = 10 if QUICK else 30  # prompts timed per side
FIRST_RUNS = 3 if QUICK else 5
STORED_PROMPTS = 50
EDITS = 3
# git's own `gc --auto` would pack the baseline's loose objects midway: none here, as none
# runs on freshline's side either (its `gc` is a command of its own).
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0"}


def build(root: Path, notes: int) -> None:
    """`notes` notes in folders of 100, a project over all of them."""
    for i in range(notes):
        folder = root / f"f{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"note{i:05d}.md").write_text(f"# Note {i}\n\n" + f"line {i}\n" * 12)
    (root / "freshline.toml").write_text('[projects.all]\ninclude = ["**"]\n')
    (root / ".freshline").mkdir()
    past = time.time() - 3600  # at rest: no file racily clean
    for path in root.rglob("*.md"):
        os.utime(path, (past, past))


class Agent:
    """One Claude Code session, its hook events answered in this process."""

    def __init__(self, root: Path, warm: Warm, name: str) -> None:
        self.root, self.warm, self.name = root, warm, name
        self.written: list[float] = []  # seconds of each prompt's writing after its answer

    def call(self, event: str, **fields: object) -> tuple[float, float]:
        """Answer one event; its seconds, by wall clock and by this thread's CPU (the
        watcher's thread shares the process)."""
        payload = json.dumps({"hook_event_name": event, "session_id": self.name,
                              "cwd": str(self.root), **fields})
        start, used = time.perf_counter(), time.thread_time()
        answer(ADAPTER, payload, HookOptions(), self.warm)
        return time.perf_counter() - start, time.thread_time() - used

    def prompt(self, text: str) -> tuple[float, float]:
        """A prompt, its checkpoint's files written (as the service does once the reply
        is sent), and the end of its answer; the prompt's seconds (wall, CPU)."""
        seconds = self.call("UserPromptSubmit", prompt=text)
        start = time.perf_counter()
        self.warm.catch_up(self.root)
        self.written.append(time.perf_counter() - start)
        self.call("Stop")
        return seconds


def counted_only(base: SessionBase, session_id: str, prompt: str) -> checkpoints.Taken:
    """The baseline's checkpoint: the flush and the turn counted, no tree, no commit (its
    tree's epoch moves on, so the next real checkpoint applies only its own round)."""
    base.tracker.flush()
    with base.store.write():
        s = base.store.session_get(session_id)
        s = replace(s, turns=s.turns + 1, live_epoch=base.tracker.epoch(s.project))
        base.store.session_put(s)
    return checkpoints.Taken(s.turns, (), base, session_id, None)


def edit(root: Path, round_: int, count: int = EDITS) -> None:
    """`count` notes in as many folders, edited."""
    for k in range(count):
        i = (round_ * 7919 + k * 1543) % NOTES
        path = root / f"f{i // 100:03d}" / f"note{i:05d}.md"
        path.write_text(path.read_text() + f"edit {round_}.{k}\n")


def prompts(root: Path, warm: Warm) -> dict[bool | None, tuple[float, float]]:
    """Median seconds (wall, CPU) of a prompt with its checkpoint (True), and of one with
    it counted only (False); under None, (the median seconds its files took to write after
    the answer, 0)."""
    agent = Agent(root, warm, "timed")
    agent.call("SessionStart", source="startup")
    agent.prompt("first")  # the first checkpoint: timed apart
    real = checkpoints.checkpoint
    timed: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for r in range(2 * ROUNDS):
        with_it = r % 2 == 0
        edit(root, r)
        checkpoints.checkpoint = real if with_it else counted_only
        try:
            timed[with_it].append(agent.prompt(f"round {r}"))
        finally:
            checkpoints.checkpoint = real
    medians = {side: (statistics.median(w for w, _ in runs),
                      statistics.median(c for _, c in runs)) for side, runs in timed.items()}
    return {**medians, None: (statistics.median(agent.written[1::2]), 0.0)}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def timed_cpu(work: Callable[[], object]) -> tuple[float, float]:
    wall, used = time.perf_counter(), cpu()
    work()
    return time.perf_counter() - wall, cpu() - used


def first_checkpoints(root: Path) -> list[tuple[float, float, float, float]]:
    """Per run: (wall, cpu) of a first checkpoint of the whole vault, then of git's (each
    run with freshline's repository removed, and a fresh `Warm` that never saw it)."""
    runs = []
    for n in range(FIRST_RUNS):
        shutil.rmtree(root / ".freshline" / "conversations.git", ignore_errors=True)
        warm = Warm()
        try:
            agent = Agent(root, warm, f"first-{n}")
            agent.call("SessionStart", source="startup")
            manager = warm.manager(root)
            s = manager.by_external(f"claude-code:first-{n}")
            assert s is not None
            ours = timed_cpu(
                lambda: checkpoints.checkpoint(manager, s.id, "first").done())  # noqa: B023
        finally:
            warm.close()
        with tempfile.TemporaryDirectory() as tmp:
            theirs = timed_cpu(lambda: git_tree(root, Path(tmp)))  # noqa: B023
        runs.append((*ours, *theirs))
    return runs


def git_tree(root: Path, git_dir: Path) -> str:
    """`git add -A && git write-tree` of the vault's notes into a fresh repository."""
    env = {**GIT_ENV, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root)}
    subprocess.run(["git", "init", "-q"], check=True, env=env, cwd=root)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text(".freshline/\nfreshline.toml\n")
    subprocess.run(["git", "add", "-A"], check=True, env=env, cwd=root)
    done = subprocess.run(["git", "write-tree"], check=True, env=env, cwd=root,
                          capture_output=True, text=True)
    return done.stdout.strip()


def stored(objects: Path) -> tuple[int, int]:
    """(apparent bytes, bytes of disk blocks) of every file under `objects`."""
    apparent = blocks = 0
    for path in objects.rglob("*"):
        if path.is_file():
            info = path.stat()
            apparent += info.st_size
            blocks += info.st_blocks * 512
    return apparent, blocks


def storage(root: Path, warm: Warm) -> tuple[tuple[int, int], tuple[int, int]]:
    """Bytes 50 prompts' checkpoints added, and bytes the same 50 git commits added."""
    with tempfile.TemporaryDirectory() as tmp:
        git_dir = Path(tmp) / "git"
        env = {**GIT_ENV, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root)}
        git_tree(root, git_dir)
        subprocess.run(["git", "commit", "-q", "-m", "first"], check=True, env=env, cwd=root)
        agent = Agent(root, warm, "stored")
        agent.call("SessionStart", source="startup")
        agent.prompt("first")
        ours_objects = root / ".freshline" / "conversations.git" / "objects"
        ours_before, theirs_before = stored(ours_objects), stored(git_dir / "objects")
        for r in range(STORED_PROMPTS):
            edit(root, 1000 + r)
            agent.prompt(f"prompt {r}")
            subprocess.run(["git", "add", "-A"], check=True, env=env, cwd=root)
            subprocess.run(["git", "commit", "-q", "-m", f"prompt {r}"], check=True, env=env,
                           cwd=root)
        ours, theirs = stored(ours_objects), stored(git_dir / "objects")
    return ((ours[0] - ours_before[0], ours[1] - ours_before[1]),
            (theirs[0] - theirs_before[0], theirs[1] - theirs_before[1]))


def main() -> None:
    os.environ["FRESHLINE_AUTOWATCH"] = "0"  # the bench's own watcher thread serves
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        build(root, NOTES)
        print(f"{NOTES:,} notes, {EDITS} edited per prompt")
        with watching(root):
            first = first_checkpoints(root)
            warm = Warm()
            try:
                report(first, root, warm)
            finally:
                warm.close()


def report(first: list[tuple[float, float, float, float]], root: Path, warm: Warm) -> None:
    ours_wall = statistics.median(r[0] for r in first)
    git_wall = statistics.median(r[2] for r in first)
    ratio = statistics.median(r[0] / r[2] for r in first)
    cpu_ratio = statistics.median(r[1] / r[3] for r in first)
    print(f"first checkpoint ÷ git add -A && git write-tree: {ratio:5.2f}× "
          f"(cpu {cpu_ratio:4.2f}×)  {ours_wall * 1000:6.0f} ms ÷ {git_wall * 1000:6.0f} ms"
          f"   goal ≤ 1.0")
    medians = prompts(root, warm)
    (wall, used), (base_wall, base_used) = medians[True], medians[False]
    print(f"prompt with its checkpoint − counted only: {(wall - base_wall) * 1000:5.1f} ms "
          f"added (cpu {(used - base_used) * 1000:4.1f} ms)  ({wall * 1000:5.1f} ms − "
          f"{base_wall * 1000:5.1f} ms)   goal ≤ 5 ms")
    print(f"  its files written after the answer (the service's queue, once the reply is "
          f"sent): {medians[None][0] * 1000:5.1f} ms")
    ours, theirs = storage(root, warm)
    print(f"{STORED_PROMPTS} prompts' checkpoints ÷ git's {STORED_PROMPTS} commits, bytes "
          f"added: {ours[0] / theirs[0]:4.2f}× apparent ({ours[0]:,} ÷ {theirs[0]:,}), "
          f"{ours[1] / theirs[1]:4.2f}× on disk ({ours[1]:,} ÷ {theirs[1]:,})   goal ≤ 1.1")


if __name__ == "__main__":
    main()
