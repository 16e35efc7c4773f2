"""What the Claude Code hooks, `status` and `changes` cost, each against a named baseline
(issues 26 and 42).

Builds a vault of 20,000 notes (files at rest: none racily clean) and runs freshline's
hooks as Claude Code runs them, as `freshline hook install claude-code` writes them into
.claude/settings.local.json: UserPromptSubmit, PostToolUse and SessionEnd posted to the
service's URL (`http` hooks), each with its stand-in command beside it, and SessionStart's
command through /bin/sh, a JSON payload on stdin, PYTHONDONTWRITEBYTECODE=1 in its
environment; after each delivery the transcript lines Claude Code writes (the context
given, an answer), so the next call finds the delivery's token. Every figure is the
median of per-pair ratios over runs taken in turn with the baseline (A B A B …), by wall
clock (CPU time in brackets: for a post, the service's own), beside both medians:

  UserPromptSubmit over http, delivers  ÷ python -c pass       goal ≤ 0.25
  UserPromptSubmit over http, nothing   ÷ python -c pass
  PostToolUse over http (a Read)        ÷ python -c pass
  SessionEnd over http                  ÷ python -c pass       (and 0 left active)
  the stand-in beside the prompt's      ÷ python -c pass
  SessionStart (the command)            ÷ python -c pass
  status, 20,000 notes                  ÷ python -c pass       goal ≤ 2
  first call in a fresh workspace       ÷ git status --porcelain -uall, in a fresh
                                          repository of the same files          goal ≤ 5
  changes P --since N, 50,000 files     ÷ watchman since, a private watchman    goal ≤ 10

with the service running (the fast path), and the prompt, the start and `status` again
without one (the slow path: the stand-in answers the prompt, autowatch off). The first
call in a fresh workspace is answered by the running service (it has its imports loaded;
the workspace is new to it); its slow path is the same call with no service; beside it,
the floor of any first call done in Python: a bare `python` that only walks the same
files with lstat; and the least a first call built from freshline's own modules does
(`LEAST`: config, ignore rules, names, scope, the listing kept as one blob, counts
printed; no session). A hook
call that fails is logged, not printed; the bench stops if the hook log holds a line. The
service runs with a private runtime folder: no other service is touched. It also says how
many of freshline's modules have cached bytecode (with none, every call compiles them).
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

from measure import (
    Run,
    end_private_user,
    paired,
    post,
    private_user,
    run,
    start_service,
    watched,
)

import freshline
from freshline.interfaces import autostart, serviceclient
from freshline.interfaces.hook.claude_code import ADAPTER
from freshline.store import SessionState, Store

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


class Hooks:
    """The hooks as `freshline hook install claude-code` wrote them: a command per event,
    and for the events Claude Code posts, the URL and the stand-in command."""

    def __init__(self, root: Path) -> None:
        run([FRESHLINE, "--workspace", str(root), "hook", "install", "claude-code"])
        settings = json.loads((root / ".claude" / "settings.local.json").read_text())
        self.commands: dict[str, str] = {}
        self.urls: dict[str, str] = {}
        for event, groups in settings["hooks"].items():
            for hook in groups[0]["hooks"]:
                if hook["type"] == "http":
                    self.urls[event] = hook["url"]
                else:  # a shell line, or the stand-in's in exec form (/bin/sh -c LINE)
                    self.commands[event] = hook.get("args", [None, hook["command"]])[-1]


class Claude:
    """One Claude Code session as the hooks see it: its id, its transcript, the hooks;
    `http` when the service answers them (else the stand-ins do)."""

    def __init__(self, root: Path, hooks: Hooks, name: str, env: dict[str, str],
                 http: bool) -> None:
        self.root, self.hooks, self.id, self.env, self.http = root, hooks, name, env, http
        self.transcript = root.parent / f"{root.name}-{name}.jsonl"
        self.transcript.touch()

    def call(self, event: str, **fields: object) -> Run:
        """One hook call; the context it printed is written to the transcript, with an
        answer after it, as Claude Code does once the prompt went out."""
        payload = json.dumps({"session_id": self.id, "transcript_path": str(self.transcript),
                              "cwd": str(self.root), "hook_event_name": event, **fields})
        if self.http and event in self.hooks.urls:
            done = post(self.hooks.urls[event], payload)
        else:
            done = run(["/bin/sh", "-c", self.hooks.commands[event]], payload, self.env)
        if done.stdout:
            given = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            with self.transcript.open("a") as t:
                t.write(json.dumps({"type": "attachment", "attachment": {
                    "type": "hook_additional_context", "content": [given]}}) + "\n")
                t.write(json.dumps({"type": "assistant", "message": {"content": "ok"}}) + "\n")
        return done

    def start(self) -> Run:
        return self.call("SessionStart", source="startup")

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


def python_pass() -> Run:
    return run(["/bin/sh", "-c", f"{PYTHON} -c pass"])


def hook_events(root: Path, hooks: Hooks, log: Path, fast: bool) -> list[str]:
    """The events' figures and `status`'s, with the service running or without one."""
    env = hook_env(log, autowatch=fast)
    runs = RUNS if fast else SLOW_RUNS
    claude = Claude(root, hooks, f"bench-{'fast' if fast else 'slow'}", env, fast)
    expect(claude.start(), "the session start prints the manifest", True)
    edits = iter(range(10**6))

    def edit() -> None:  # an agent's change (the post finds it through the cookie)
        note = root / "area0" / "topic0" / "note 0.md"
        note.write_text(note.read_text() + f"edit {next(edits)}\n")

    def delivering() -> Run:
        done = claude.prompt()
        return expect(done, "a prompt after an edit delivers it", "project_context_updates"
                      in done.stdout)

    def quiet() -> Run:
        done = claude.prompt()
        return expect(done, "a prompt with nothing due prints nothing", done.stdout == "")

    def read() -> Run:
        return claude.read("area1/topic0/note 1.md")

    def stand_in() -> Run:
        return run(["/bin/sh", "-c", hooks.commands["UserPromptSubmit"]], "{}", env)

    def start() -> Run:
        return Claude(root, hooks, f"start-{fast}-{next(edits)}", env, fast).start()

    def status() -> Run:
        return run([FRESHLINE, "--workspace", str(root), "status"], env=env)

    sessions: list[Claude] = []

    def open_session() -> None:
        sessions.append(Claude(root, hooks, f"end-{fast}-{len(sessions)}", env, fast))
        sessions[-1].prompt()

    def end() -> Run:
        return sessions[-1].call("SessionEnd", reason="prompt_input_exit")

    how = "over http" if fast else "(stand-in)"
    lines = [
        (f"UserPromptSubmit {how}, delivers", paired(delivering, python_pass, runs, edit)),
        (f"UserPromptSubmit {how}, nothing", paired(quiet, python_pass, runs)),
        ("SessionStart (the command)", paired(start, python_pass, runs)),
        (f"status, {NOTES:,} notes", paired(status, python_pass, runs)),
    ]
    if fast:  # (no service: nothing answers the posts of a tool or an end)
        lines[2:2] = [("PostToolUse over http (a Read)", paired(read, python_pass, runs)),
                      ("SessionEnd over http", paired(end, python_pass, runs, open_session)),
                      ("  the prompt's stand-in (service up)",
                       paired(stand_in, python_pass, runs))]
    store = Store(root / ".freshline")
    active = sum(store.session_by_external(ADAPTER.external_id(c.id)).state is SessionState.ACTIVE
                 for c in sessions)
    return [f"{name:38} {figure.line()}" for name, figure in lines] + [
        f"{'  sessions left active after SessionEnd':38} {active} of {len(sessions)}"]


def first_calls(template: Path, log: Path, tmp: Path) -> list[str]:
    """The first call in a fresh workspace, ÷ `git status` in a fresh repository: its
    SessionStart, answered by the running service (its fast path) or by the command
    itself (no service)."""
    repo = tmp / "repo"
    shutil.copytree(template, repo, ignore=shutil.ignore_patterns(".freshline"))
    run(["git", "init", "-q", str(repo)], env=GIT_ENV)

    def status() -> Run:
        return run(["git", "-C", str(repo), "status", "--porcelain", "-uall"], env=GIT_ENV)

    fresh = tmp / "fresh"
    hooks: list[Hooks] = []
    served: list[bool] = []  # whether the last first call was the service's

    def copy() -> None:
        if served and served[-1]:  # the service watches the copy once it answered: let go
            wait(lambda: watched(fresh) is not None, "the service to watch the copy")
            serviceclient.ask({"op": "unwatch", "root": str(fresh)}, timeout=300)
            wait(lambda: watched(fresh) is None, "the service to let the copy go")
            served.clear()
        if fresh.exists():
            shutil.rmtree(fresh)
        run(["cp", "-a", str(template), str(fresh)])
        hooks[:] = [Hooks(fresh)]

    def first(service: bool) -> Run:
        served.append(service)
        done = Claude(fresh, hooks[0], "first", hook_env(log, service), service).start()
        return expect(done, "a first call prints the manifest",
                      "<project_context " in done.stdout)

    def walk() -> Run:
        return run([PYTHON, "-c", WALK, str(repo)])

    def least() -> Run:
        return run([PYTHON, "-c", LEAST, str(template), str(tmp / "least.db")])

    start_service()
    try:
        fast = paired(lambda: first(True), status, FIRST_RUNS, copy)
    finally:
        copy()
        autostart.stop()
    slow = paired(lambda: first(False), status, FIRST_RUNS, copy)
    floor = paired(walk, status, FIRST_RUNS)
    lean = paired(least, status, FIRST_RUNS)
    return [f"{'first call, fresh workspace (service)':38} {fast.line()}",
            f"{'  (slow path: no service)':38} {slow.line()}",
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
        start_service(root)
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
        autostart.stop()
        slow = paired(ours, theirs, SLOW_RUNS)
    finally:
        watchman.stop()
        autostart.stop()
    name = f"changes P --since N, {FILES:,} files"
    return [f"{name:38} {fast.line()}", f"{'  (slow path: no service)':38} {slow.line()}"]


def bytecode() -> str:
    """How many of freshline's modules a new process finds compiled."""
    package = Path(freshline.__file__).parent
    sources = list(package.rglob("*.py"))
    compiled = sum(Path(importlib.util.cache_from_source(str(s))).exists() for s in sources)
    return f"bytecode cached for {compiled} of {len(sources)} freshline modules"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        private_user(tmp)
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
                hooks = Hooks(vault)
                start_service(vault)
                say("fast path (the service running), baseline python -c pass:")
                say("\n".join(hook_events(vault, hooks, log, fast=True)))
                autostart.stop()
                say("slow path (no service), baseline python -c pass:")
                say("\n".join(hook_events(vault, hooks, log, fast=False)))
            if "first" in SECTIONS:
                say("\nbaseline git status --porcelain -uall (fresh repository):")
                say("\n".join(first_calls(template, log, tmp)))
            if "changes" in SECTIONS:
                say("\nbaseline watchman since (a private watchman):")
                say("\n".join(changes_since(tmp)))
        finally:  # no service outlives its folders
            end_private_user()
        if log.exists() and log.read_text().strip():
            raise SystemExit(f"bench: the hook failed (its log):\n{log.read_text()}")


if __name__ == "__main__":
    main()
