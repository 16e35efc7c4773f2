"""What the Claude Code hook and `changes` cost, each against a named baseline (issue 26).

Builds a vault of 20,000 notes (files at rest: none racily clean) and runs freshline's hook
as Claude Code runs it: the very command `freshline hook install claude-code` writes into
.claude/settings.json, through /bin/sh, a JSON payload on stdin, PYTHONDONTWRITEBYTECODE=1
in its environment, and after each delivery the transcript lines Claude Code writes (the
context given, an answer), so the next call finds the delivery's token. Every figure is
the median of per-pair ratios over runs taken in turn with the baseline (A B A B …), by
wall clock (CPU time in brackets), beside both medians:

  UserPromptSubmit, delivers a change   ÷ python -c pass       goal ≤ 3
  UserPromptSubmit, nothing due         ÷ python -c pass       goal ≤ 2
  PostToolUse (a Read)                  ÷ python -c pass       goal ≤ 2
  SessionEnd                            ÷ python -c pass       goal ≤ 3 (and 0 left active)
  first call in a fresh workspace       ÷ git status --porcelain -uall, in a fresh
                                          repository of the same files          goal ≤ 5
  changes P --since N, 50,000 files     ÷ watchman since, a private watchman    goal ≤ 10

each with the watcher running (the fast path) and without one (the slow path: the watcher
stopped, autowatch off). A first call has no watcher either way: its slow path is the
same call with autowatch off (no watcher started); beside it, the floor of any first call
done in Python: a bare `python` that only walks the same files with lstat; and the least
a first call built from freshline's own modules does (`LEAST`: config, ignore rules,
names, scope, the listing kept as one blob, counts printed; no session). A hook call
that fails is logged, not printed; the bench stops if the hook log holds a line. It also
says how many of freshline's modules have cached bytecode (with none, every call compiles
them).
Usage: python bench/hook.py [--quick] [hooks] [first] [changes]
  --quick: 2,000 notes, 5,000 files, fewer runs; naming sections runs only those
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from measure import Run, paired, run

import freshline
from freshline.interfaces.hook.claude_code import ADAPTER
from freshline.store import SessionState, Store
from freshline.tracker.autowatch import holder, stop
from freshline.tracker.hints import watcher_alive

QUICK = "--quick" in sys.argv
SECTIONS = {"hooks", "first", "changes"} & set(sys.argv) or {"hooks", "first", "changes"}
NOTES = 2_000 if QUICK else 20_000
FILES = 5_000 if QUICK else 50_000
RUNS, SLOW_RUNS, FIRST_RUNS = (5, 3, 3) if QUICK else (11, 5, 5)
FRESHLINE = str(Path(sys.executable).with_name("freshline"))  # the console script
PYTHON = str(Path(sys.executable).absolute())
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
PROJECT = "vault"
AT_REST = time.time() - 3600  # every built file's mtime: an hour ago
WALK = ("import os, sys\n"  # the least a first call in Python does: list with lstat
        "for folder, dirs, files in os.walk(sys.argv[1]):\n"
        "    dirs[:] = [d for d in dirs if d != '.git']\n"
        "    for name in files:\n"
        "        os.lstat(os.path.join(folder, name))\n")


# The least a first call built from freshline's own modules does (issue 26's last goal):
# load the config and the ignore rules, list the files by name, judge each by the scope,
# keep the listing in SQLite as one blob and print the counts per folder. No session, no
# index rows, no stored manifest: the floor of any first call that does not parse its
# config and rules a second way.
LEAST = ("import sqlite3, sys\n"
         "from collections import Counter\n"
         "from pathlib import Path\n"
         "from freshline.config.loading import load_config\n"
         "from freshline.ignore import load_rules\n"
         "from freshline.tracker.scan import Scanner\n"
         "root, db = Path(sys.argv[1]), sqlite3.connect(sys.argv[2])\n"
         "config = load_config(root)\n"
         "names = [raw for raw, _ in Scanner(root, None, load_rules(\n"
         "    root, config.workspace.ignore_settings)).names()]\n"
         f"scope = config.project({PROJECT!r}).scope\n"
         "kept = [p for p in map(bytes.decode, names) if scope.matches_path(p)]\n"
         "db.execute('CREATE TABLE IF NOT EXISTS listing (names BLOB)')\n"
         "with db:\n"
         "    db.execute('INSERT INTO listing VALUES (?)', (b'\\0'.join(names),))\n"
         "for folder, n in sorted(Counter(p.partition('/')[0] for p in kept).items()):\n"
         "    print(f'- {root}/{folder}/: {n} files')\n")


def build(root: Path, n: int, project: str = PROJECT, config: bool = True) -> None:
    """`n` notes in 40 × 25 folders (all in the project), written an hour ago."""
    for i in range(n):
        folder = root / f"area{i % 40}" / f"topic{(i // 40) % 25}"
        folder.mkdir(parents=True, exist_ok=True)
        note = folder / f"note {i}.md"
        note.write_text(f"# Note {i}\n\nSee [[note {i + 1}]] #tag{i % 9}\n")
        os.utime(note, (AT_REST, AT_REST))
    if config:  # `area*/**`: every note (a bare `area*` names only the top folders)
        (root / "freshline.toml").write_text(f'[projects.{project}]\ninclude = ["area*/**"]\n')
        (root / ".freshline").mkdir()


def hook_env(log: Path, autowatch: bool) -> dict[str, str]:
    """What the hook runs with: the user's environment as Claude Code passes it."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "FRESHLINE_HOOK_LOG": str(log),
            "FRESHLINE_AUTOWATCH": "1" if autowatch else "0"}


def installed(root: Path) -> dict[str, str]:
    """The command per event, as `freshline hook install claude-code` wrote them."""
    run([FRESHLINE, "--workspace", str(root), "hook", "install", "claude-code"])
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    return {event: groups[0]["hooks"][0]["command"]
            for event, groups in settings["hooks"].items()}


class Claude:
    """One Claude Code session as the hook sees it: its id, its transcript, the hooks."""

    def __init__(self, root: Path, commands: dict[str, str], name: str, env: dict[str, str]):
        self.root, self.commands, self.id, self.env = root, commands, name, env
        self.transcript = root.parent / f"{root.name}-{name}.jsonl"
        self.transcript.touch()

    def call(self, event: str, **fields: object) -> Run:
        """One hook call; the context it printed is written to the transcript, with an
        answer after it, as Claude Code does once the prompt went out."""
        payload = {"session_id": self.id, "transcript_path": str(self.transcript),
                   "cwd": str(self.root), "hook_event_name": event, **fields}
        done = run(["/bin/sh", "-c", self.commands[event]], json.dumps(payload), self.env)
        if done.stdout:
            given = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            with self.transcript.open("a") as t:
                t.write(json.dumps({"type": "attachment", "attachment": {
                    "type": "hook_additional_context", "content": [given]}}) + "\n")
                t.write(json.dumps({"type": "assistant", "message": {"content": "ok"}}) + "\n")
        return done

    def prompt(self) -> Run:
        return self.call("UserPromptSubmit", prompt="go on")

    def read(self, rel: str) -> Run:
        path = str(self.root / rel)
        return self.call("PostToolUse", tool_name="Read", tool_input={"file_path": path},
                         tool_response={"type": "text", "file": {"filePath": path}})


def expect(done: Run, what: str, ok: bool) -> Run:
    if not ok:
        raise SystemExit(f"bench: {what} (stdout: {done.stdout[:200]!r})")
    return done


def epoch(root: Path, project: str = PROJECT) -> int:
    state = Store(root / ".freshline").project_state(project)
    return state.epoch if state else 0


def wait(condition: Callable[[], bool], what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: gave up waiting for {what}")
        time.sleep(0.05)


def start_watcher(root: Path) -> None:
    subprocess.Popen([FRESHLINE, "--workspace", str(root), "watch", "--quiet"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
    store = Store(root / ".freshline")
    wait(lambda: watcher_alive(store), "the watcher's first full scan")


def kill_watcher(root: Path) -> None:
    """End the watcher a hook started (by the pid in its lock) once it holds the lock: the
    reading it would do competes with the next run."""
    wait(lambda: holder(root) is not None, "the watcher the hook started", 60)
    pid = holder(root)
    if pid:
        os.kill(pid, signal.SIGKILL)
    wait(lambda: holder(root) is None, "the watcher to go", 60)


def python_pass() -> Run:
    return run(["/bin/sh", "-c", f"{PYTHON} -c pass"])


def hook_events(root: Path, commands: dict[str, str], log: Path, fast: bool) -> list[str]:
    """The four events' figures, with or without a watcher."""
    env = hook_env(log, autowatch=fast)
    runs = RUNS if fast else SLOW_RUNS
    claude = Claude(root, commands, f"bench-{'fast' if fast else 'slow'}", env)
    expect(claude.prompt(), "the first prompt prints the manifest", True)
    edits = iter(range(10**6))

    def edit() -> None:  # an agent's change, logged by the watcher before the prompt
        before = epoch(root)
        note = root / "area0" / "topic0" / "note 0.md"
        note.write_text(note.read_text() + f"edit {next(edits)}\n")
        if fast:
            wait(lambda: epoch(root) > before, "the watcher to log an edit")

    def delivering() -> Run:
        done = claude.prompt()
        return expect(done, "a prompt after an edit delivers it", "project_context_updates"
                      in done.stdout)

    def quiet() -> Run:
        done = claude.prompt()
        return expect(done, "a prompt with nothing due prints nothing", done.stdout == "")

    def read() -> Run:
        return claude.read("area1/topic0/note 1.md")

    sessions: list[Claude] = []

    def open_session() -> None:
        sessions.append(Claude(root, commands, f"end-{fast}-{len(sessions)}", env))
        sessions[-1].prompt()

    def end() -> Run:
        return sessions[-1].call("SessionEnd", reason="prompt_input_exit")

    lines = [
        ("UserPromptSubmit, delivers a change", paired(delivering, python_pass, runs, edit)),
        ("UserPromptSubmit, nothing due", paired(quiet, python_pass, runs)),
        ("PostToolUse (a Read)", paired(read, python_pass, runs)),
        ("SessionEnd", paired(end, python_pass, runs, open_session)),
    ]
    store = Store(root / ".freshline")
    active = sum(store.session_by_external(ADAPTER.external_id(c.id)).state is SessionState.ACTIVE
                 for c in sessions)
    return [f"{name:38} {figure.line()}" for name, figure in lines] + [
        f"{'  sessions left active after SessionEnd':38} {active} of {len(sessions)}"]


def first_calls(template: Path, log: Path, tmp: Path) -> list[str]:
    """The first call in a fresh workspace, ÷ `git status` in a fresh repository."""
    repo = tmp / "repo"
    shutil.copytree(template, repo, ignore=shutil.ignore_patterns(".freshline"))
    run(["git", "init", "-q", str(repo)], env=GIT_ENV)

    def status() -> Run:
        return run(["git", "-C", str(repo), "status", "--porcelain", "-uall"], env=GIT_ENV)

    fresh = tmp / "fresh"
    commands: dict[str, str] = {}

    def copy() -> None:
        if fresh.exists():
            shutil.rmtree(fresh)
        run(["cp", "-a", str(template), str(fresh)])
        commands.update(installed(fresh))

    def first(autowatch: bool) -> Run:
        claude = Claude(fresh, commands, "first", hook_env(log, autowatch))
        done = claude.prompt()
        if autowatch:  # the watcher the call started, killed before it reads the files
            kill_watcher(fresh)
        return expect(done, "a first call prints the manifest", "<project_context " in
                      done.stdout)

    def walk() -> Run:
        return run([PYTHON, "-c", WALK, str(repo)])

    def least() -> Run:
        return run([PYTHON, "-c", LEAST, str(template), str(tmp / "least.db")])

    out = []
    for autowatch in (True, False):
        out.append(paired(lambda a=autowatch: first(a), status, FIRST_RUNS, copy))
    fast, slow = out
    floor = paired(walk, status, FIRST_RUNS)
    lean = paired(least, status, FIRST_RUNS)
    return [f"{'first call, fresh workspace':38} {fast.line()}",
            f"{'  (slow path: no watcher started)':38} {slow.line()}",
            f"{'  (floor: python walking with lstat)':38} {floor.line()}",
            f"{'  (floor: least with freshline code)':38} {lean.line()}"]


class Watchman:
    """A watchman of our own: its socket, state and log in a private folder."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.sock = str(folder / "sock")
        self.process = subprocess.Popen(
            ["watchman", "--foreground", f"--sockname={self.sock}",
             f"--logfile={folder / 'log'}", f"--statefile={folder / 'state'}",
             f"--pidfile={folder / 'pid'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait(lambda: os.path.exists(self.sock), "watchman's socket", 30)

    def command(self, *args: str) -> list[str]:
        return ["watchman", f"--sockname={self.sock}", "--no-spawn", *args]

    def stop(self) -> None:
        subprocess.run(self.command("shutdown-server"), capture_output=True)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


def changes_since(tmp: Path) -> list[str]:
    """`freshline changes P --since N` on 50,000 files ÷ `watchman since`."""
    if shutil.which("watchman") is None:
        return ["changes --since: watchman is not installed (apt-get install -y watchman)"]
    root = tmp / "files"
    build(root, FILES, "files")
    run([FRESHLINE, "--workspace", str(root), "scan"])
    watchman = Watchman(tmp / "watchman")
    try:
        run(watchman.command("watch", str(root)))
        clock = json.loads(run(watchman.command("clock", str(root))).stdout)["clock"]
        start_watcher(root)
        since = epoch(root, "files")
        for i in range(10):
            note = root / f"area{i}" / "topic0" / f"note {i}.md"
            note.write_text(note.read_text() + "edited\n")
        wait(lambda: epoch(root, "files") > since, "the watcher to log the edits")
        time.sleep(0.5)  # both have settled

        def ours() -> Run:
            return run([FRESHLINE, "--workspace", str(root), "changes", "files",
                        "--since", str(since)])

        def theirs() -> Run:
            return run(watchman.command("since", str(root), clock))

        fast = paired(ours, theirs, RUNS)
        stop(root)
        slow = paired(ours, theirs, SLOW_RUNS)
    finally:
        watchman.stop()
        stop(root)
    name = f"changes P --since N, {FILES:,} files"
    return [f"{name:38} {fast.line()}", f"{'  (slow path: no watcher)':38} {slow.line()}"]


def bytecode() -> str:
    """How many of freshline's modules a new process finds compiled."""
    package = Path(freshline.__file__).parent
    sources = list(package.rglob("*.py"))
    compiled = sum(Path(importlib.util.cache_from_source(str(s))).exists() for s in sources)
    return f"bytecode cached for {compiled} of {len(sources)} freshline modules"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        log = tmp / "hook.log"
        vault = tmp / "vault"
        build(vault, NOTES)
        template = tmp / "template"
        run(["cp", "-a", str(vault), str(template)])
        say = print
        say(f"freshline {freshline.__version__}, {bytecode()}\n")
        say(f"a vault of {NOTES:,} notes: p50 ratio (CPU), A ÷ baseline")
        try:
            if "hooks" in SECTIONS:
                commands = installed(vault)
                start_watcher(vault)
                say("fast path (watcher running), baseline python -c pass:")
                say("\n".join(hook_events(vault, commands, log, fast=True)))
                stop(vault)
                say("slow path (no watcher), baseline python -c pass:")
                say("\n".join(hook_events(vault, commands, log, fast=False)))
            if "first" in SECTIONS:
                say("\nbaseline git status --porcelain -uall (fresh repository):")
                say("\n".join(first_calls(template, log, tmp)))
            if "changes" in SECTIONS:
                say("\nbaseline watchman since (a private watchman):")
                say("\n".join(changes_since(tmp)))
        finally:  # no watcher outlives its folder
            for root in (vault, tmp / "fresh", tmp / "files"):
                stop(root)
        if log.exists() and log.read_text().strip():
            raise SystemExit(f"bench: the hook failed (its log):\n{log.read_text()}")


if __name__ == "__main__":
    main()
