"""Shared fixtures: real workspaces in temp dirs, isolated from the user's environment."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from freshline.config import Config, add_project, init_workspace, load_config
from freshline.conversation.git import Git
from freshline.interfaces import autostart
from freshline.interfaces.service.daemon import Service
from freshline.session import SessionManager
from freshline.store import Store
from freshline.store.location import ENV_VAR as STORE_URL
from freshline.tracker import Tracker
from tests.pgserver import PgServer, find_bindir

# No per-example deadline anywhere: a shared, loaded machine takes longer than Hypothesis's
# 200 ms on a slow example, and a deadline then fails a test that is right. Each test keeps
# its own example count.
settings.register_profile("freshline", deadline=None)
settings.load_profile("freshline")


def git_env(**extra: str) -> dict[str, str]:
    """The environment the tests run git in: this (isolated) one without inherited GIT_*
    variables, with a committer identity and no system config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    identity = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1"}
    return env | identity | extra


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    """Run git in `cwd` for a test's own setup; returns its stripped standard output."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=input, env=git_env(), check=True, capture_output=True
    )
    return done.stdout.decode().strip()


@pytest.fixture(autouse=True, scope="session")
def _no_service_of_anyone_else(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module fixtures run before `_isolated_env` (Codex's and Gemini CLI's tests run
    their clients in one): for them too the service's folders are the suite's own, so
    the hooks they run never reach a service a developer runs."""
    before = _service_of_a_cleared_environment()
    runtime = Path(tempfile.mkdtemp(prefix="fl-", dir="/tmp"))
    state = tmp_path_factory.mktemp("session-user")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        monkeypatch.setenv("XDG_STATE_HOME", str(state / "state"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(state / "config"))
        for key in ("FRESHLINE_AUTOWATCH", "FRESHLINE_RUNTIME_DIR"):
            monkeypatch.delenv(key, raising=False)
        yield
        autostart.stop()
    shutil.rmtree(runtime, ignore_errors=True)
    leaked = _service_of_a_cleared_environment()
    assert leaked in (None, before), (
        f"a program of the suite, started without $XDG_RUNTIME_DIR, left a service running "
        f"(pid {leaked}) in the user's own runtime folder")


def _service_of_a_cleared_environment() -> int | None:
    """The service a program started with HOME and PATH alone (as Codex starts an MCP
    server) would find: none of the suite's may be left there."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for key in ("XDG_RUNTIME_DIR", "FRESHLINE_RUNTIME_DIR"):
            monkeypatch.delenv(key, raising=False)
        return autostart.running()


@pytest.fixture(autouse=True)
def _isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Each test is a user of its own: its home, config and state folders, and a runtime
    folder of its own (short: the service's socket lives there), so it never finds or
    talks to a service another test or a developer started. A service the test left
    running is stopped, and fails the test."""
    runtime = Path(tempfile.mkdtemp(prefix="fl-", dir="/tmp"))
    isolate(monkeypatch, tmp_path_factory.mktemp("home"), runtime)
    yield
    # A command's last act may be to start the service without waiting for it (seen: one
    # took its lock after the stop below looked, and outlived the suite): those not
    # holding the lock yet go first, so that what holds it is what the test left.
    holder = autostart.running()
    for pid in services_running(str(runtime)):
        if pid != holder:
            ended(pid, signal.SIGTERM)
    left = autostart.stop()
    shutil.rmtree(runtime, ignore_errors=True)
    assert left is None, f"the test left a service running (pid {left})"


def services_running(runtime: str) -> list[int]:
    """The pids of `freshline service run` processes started for the runtime folder
    `runtime` (by their environment: other tests and people run theirs)."""
    xdg, own = f"XDG_RUNTIME_DIR={runtime}".encode(), f"FRESHLINE_RUNTIME_DIR={runtime}/".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"service\0run" in command and any(v == xdg or v.startswith(own) for v in env):
            found.append(int(proc.name))
    return found


def ended(pid: int, sig: int | None = None, timeout: float = 10.0) -> None:
    """Send `sig` (if any) to `pid` and wait until it is gone (a zombie counts as gone:
    its parent, not this process, reaps it)."""
    with suppress(ProcessLookupError):
        if sig is not None:
            os.kill(pid, sig)
    wait_for(lambda: process_state(pid) in ("", "Z", "X"), f"process {pid} to end", timeout)


def process_state(pid: int) -> str:
    """A process's state letter from /proc (R, S, Z…), "" when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2:].split(" ", 1)[0]


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path, runtime: Path | None = None) -> None:
    """Point the user's directories at `home` (the runtime folder at `runtime`, else in
    `home`) and drop what would reach outside (a module fixture, set up before the
    autouse one, calls it under its own MonkeyPatch)."""
    if runtime is None:
        runtime = home / "run"
        runtime.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                STORE_URL, "XDG_CACHE_HOME", "FRESHLINE_NOTIFIER", "FRESHLINE_AUTOWATCH",
                "FRESHLINE_RUNTIME_DIR"):
        monkeypatch.delenv(key, raising=False)


def close_pools() -> None:
    """Close this process's PostgreSQL connection pools (if it opened any). Each test's
    schema, each `renew()`'s, is a URL and so a pool of its own: a process closes its pools
    at exit, but the suite is one long process."""
    postgres = sys.modules.get("freshline.store.postgres")
    if postgres is not None:
        postgres.close_pools()


def wait_for(
    condition: Callable[[], object], what: str = "the condition", timeout: float = 30.0
) -> None:
    """Poll `condition` until it holds; fail in one line naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def _pools_closed() -> Iterator[None]:
    yield
    close_pools()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server for the whole run. Missing binaries skip the PostgreSQL
    tests on a developer's machine and fail them in CI (CI=true)."""
    bindir = find_bindir()
    if bindir is None:
        why = "PostgreSQL server binaries not found (apt-get install postgresql-15)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    server = PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


class StoreBackend:
    """The backend a parametrized test runs on. On PostgreSQL each test (or each
    `renew()`) gets a schema of its own, named to freshline by FRESHLINE_STORE_URL, so
    every Tracker, SessionManager and CLI child process of the test uses it."""

    def __init__(self, name: str, server: PgServer | None, monkeypatch: pytest.MonkeyPatch):
        self.name = name
        self.server = server
        self.monkeypatch = monkeypatch
        self.url: str | None = None
        self.renew()

    def renew(self) -> str | None:
        """A fresh, empty store for what the test opens next (PostgreSQL: a new schema)."""
        if self.server is not None:
            close_pools()  # the stores of the schema before are done with
            self.url = self.server.new_schema()
            self.monkeypatch.setenv(STORE_URL, self.url)
        return self.url

    def store(self, data_dir: Path) -> Store:
        """A store on this backend (SQLite: under `data_dir`)."""
        return Store(data_dir, self.url)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> StoreBackend:
    """Run the test on each store backend."""
    server = request.getfixturevalue("pg_server") if request.param == "postgresql" else None
    return StoreBackend(request.param, server, monkeypatch)


class Workspace:
    """A real workspace on disk, with helpers to edit files and config."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, rel: str, text: str | bytes = "") -> Path:
        """Create or overwrite a file, making parent folders."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def configure(self, projects: dict[str, dict[str, object]], **workspace: object) -> Config:
        """Write freshline.toml with these projects and workspace settings."""
        lines = ["[workspace]"]
        lines += [f"{k} = {_toml(v)}" for k, v in workspace.items()]
        for name, table in projects.items():
            lines.append(f"[projects.{name}]")
            lines += [f"{k} = {_toml(v)}" for k, v in table.items()]
        (self.root / "freshline.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (self.root / ".freshline").mkdir(exist_ok=True)
        return self.config()

    def config(self) -> Config:
        """The workspace's config as loaded now."""
        return load_config(self.root)

    def tracker(self) -> Tracker:
        """A tracker over the current config."""
        return Tracker(self.config())


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """An empty workspace root (configure it with `ws.configure`)."""
    root = tmp_path / "ws"
    root.mkdir()
    cwd = os.getcwd()
    yield Workspace(root)
    os.chdir(cwd)


@pytest.fixture
def manager(ws: Workspace) -> Iterator[SessionManager]:
    """A session manager over the workspace as configured (configure it first), closed
    after the test."""
    m = SessionManager(ws.config())
    yield m
    m.close()


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Git:
    """An empty bare repository, shared by a module's tests."""
    path = tmp_path_factory.mktemp("bare")
    git(path, "init", "-q", "--bare")
    return Git(path)


@contextmanager
def turn_running(manager: SessionManager, session_id: str) -> Iterator[threading.Event]:
    """Another thread holds the session's turn lock for the block, or until the event
    yielded is set."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with manager.turn_lock(session_id):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(30)
    try:
        yield release
    finally:
        release.set()
        thread.join()


@pytest.fixture
def two_projects(ws: Workspace) -> Workspace:
    """A workspace with project `p` over `notes/` (a.md) and `q` over `other/` (x.md)."""
    ws.write("notes/a.md", "# A\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    return ws


@pytest.fixture
def hook_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where hooks run from this test log their failures (`$FRESHLINE_HOOK_LOG`)."""
    path = tmp_path / "logs" / "hook.log"
    monkeypatch.setenv("FRESHLINE_HOOK_LOG", str(path))
    return path


@pytest.fixture
def code(tmp_path: Path) -> Iterator[tuple[SessionManager, Path]]:
    """A git checkout on `main` with `src/a.py`, an isolated project `code` over `src`, and a
    session manager on it."""
    root = tmp_path / "repo"
    init_workspace(root)
    (root / "src").mkdir()
    (root / "src/a.py").write_text("a = 1\n")
    add_project(root, "code", ["src"], mode="isolated")
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    manager = SessionManager(load_config(root))
    yield manager, root
    manager.close()


def install_hook(root: Path, *extra: str) -> dict[str, Any]:
    """`freshline hook install claude-code` in the workspace, as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "freshline", "hook", "install", "claude-code",
                           "--json", *extra], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def hook_answer(cwd: Path, session: str = "claude-1", event: str = "UserPromptSubmit") -> str:
    """What the Claude Code hook prints for one call, answered in this process
    (`hook.core.answer`, as the hook process and the service call it)."""
    from freshline.interfaces.hook.claude_code import ADAPTER
    from freshline.interfaces.hook.core import Warm, answer
    from freshline.interfaces.hook.protocol import HookOptions

    payload = json.dumps({"hook_event_name": event, "session_id": session, "cwd": str(cwd),
                          "prompt": "hi"})
    warm = Warm()
    try:
        return answer(ADAPTER, payload, HookOptions(), warm).text
    finally:
        warm.close()


_SERVICES: list[Service] = []


def settled() -> None:
    """After a hook process: wait for what it handed the service running in this process
    (a PostToolUse, a SessionEnd) to be done, as the agent's next call does by queueing
    behind it."""
    for service in _SERVICES:
        service.hooks.drain()


@contextmanager
def serving() -> Iterator[Service]:
    """The per-user service, run in this process (its threads): every hook process and
    hot command of the test asks it over its socket. Stopped after."""
    from freshline.interfaces import serviceclient
    from freshline.interfaces.service.daemon import Log
    from freshline.interfaces.service.places import log_path
    from freshline.tracker.watchlock import WatchLock

    folder = Path(serviceclient.runtime_dir())
    assert serviceclient.private(str(folder))
    lock = WatchLock(folder / serviceclient.LOCK_NAME)
    assert lock.acquire(), "a service already runs for this test's user"
    service = Service(folder, Log(log_path()))
    service.start([])
    _SERVICES.append(service)
    try:
        yield service
    finally:
        _SERVICES.remove(service)
        service.close()
        lock.release()


@pytest.fixture
def service() -> Iterator[Service]:
    """The per-user service, run in this process (see `serving`)."""
    with serving() as running:
        yield running


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run `fn` on a thread; what it returned or raised lands in the list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def hook_in_process(stdin: str, env: dict[str, str] | None = None, agent: str = "claude-code",
                    workspace: str | None = None, project: str | None = None) -> str:
    """The hook's stdout for one payload, as `freshline hook <agent>` prints it, run in
    this process through its fast path (`cli.fast.hook`: handed to the service when one
    runs, else done here); `env` is added to the environment meanwhile."""
    import contextlib
    import io

    from freshline.interfaces.cli import fast

    out, saved_env, saved_stdin = io.StringIO(), dict(os.environ), sys.stdin
    os.environ.update(env or {})
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out):
            assert fast.hook(agent, workspace, project) == 0
    finally:
        sys.stdin = saved_stdin
        os.environ.clear()
        os.environ.update(saved_env)
    settled()
    return out.getvalue()


# The slowest files first (`--durations` of a whole run, longest first): the two workers
# take a file at a time, so a long file collected last would run alone while the other
# worker idles at the end. The Makefile's `--no-loadscope-reorder` keeps this order (xdist
# otherwise sorts files by their number of tests).
SLOW_FIRST = ("test_acp.py", "test_mcp.py", "test_service.py", "test_inspector.py",
              "test_acp_claude_code.py", "test_claude_code.py", "test_claude_code_rewind.py",
              "test_delivery_budget.py",
              "test_cli_conversations.py", "test_crash_recovery.py", "test_chat.py",
              "test_hostile_input.py", "test_bulk_changes.py", "test_hook.py",
              "test_hook_install.py", "test_cli_finish.py", "test_serve_connections.py",
              "test_context_budget.py", "test_materialize_isolation.py", "test_serve.py",
              "test_serve_oauth.py", "test_session.py", "test_lifecycle.py",
              "test_serve_limits.py", "test_gemini_cli.py", "test_selftest.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the slowest files first (a stable sort: each file's tests keep their order)."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
