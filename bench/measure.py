"""What the bench scripts share: timing one process by wall clock and by CPU, and a
workspace's watcher running in a thread, and a service of the bench's own user."""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    """One process: wall-clock and CPU seconds (user + system), and what it printed."""

    wall: float
    cpu: float
    stdout: str = ""


def run(command: list[str], stdin: str = "", env: Mapping[str, str] | None = None) -> Run:
    """Run one process to its end (it must exit 0) and time it. The machine is shared, so
    CPU time is kept beside wall time: it says what the work costs whatever else runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, text=True, check=True, capture_output=True,
                          env=None if env is None else dict(env))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, done.stdout)


def timed(command: list[str], stdin: str = "") -> tuple[float, float]:
    """Wall-clock and CPU seconds of one process."""
    done = run(command, stdin)
    return done.wall, done.cpu


@dataclass(frozen=True)
class Paired:
    """Medians of A and of its baseline B over runs taken in turn (A B A B …), and the
    median of the per-pair ratios (pairing keeps a ratio fair while the machine's load
    drifts)."""

    a: float  # A's median wall seconds
    b: float  # B's median wall seconds
    ratio: float  # median of A/B, pair by pair, by wall clock
    cpu_ratio: float  # the same by CPU time

    def line(self, a_name: str = "", b_name: str = "") -> str:
        """`ratio (cpu ratio)  A ms ÷ B ms`."""
        return (f"{self.ratio:6.1f}× (cpu {self.cpu_ratio:5.1f}×)  "
                f"{a_name}{self.a * 1000:7.0f} ms ÷ {b_name}{self.b * 1000:5.0f} ms")


def paired(a: Callable[[], Run], b: Callable[[], Run], runs: int,
           setup: Callable[[], object] | None = None) -> Paired:
    """Run A then B, `runs` times (`setup` before each A, untimed)."""
    pairs = []
    for _ in range(runs):
        if setup is not None:
            setup()
        pairs.append((a(), b()))
    return Paired(
        statistics.median(x.wall for x, _ in pairs),
        statistics.median(y.wall for _, y in pairs),
        statistics.median(x.wall / y.wall for x, y in pairs),
        statistics.median(x.cpu / max(y.cpu, 1e-3) for x, y in pairs),
    )


@contextmanager
def watching(root: Path) -> Iterator[None]:
    """The workspace's watcher running in a thread (alive before the block starts)."""
    from freshline.config import load_config
    from freshline.tracker.hints import watcher_alive
    from freshline.tracker.watcher import Watcher

    watcher = Watcher(load_config(root))
    watcher.start()
    try:
        deadline = time.monotonic() + 900
        while not watcher_alive(watcher.tracker.store) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield
    finally:
        watcher.close()


# --- the service, private to the bench ---------------------------------------------------


def private_user(tmp: Path) -> None:
    """Make this process (and what it starts) a user of the bench's own: its runtime,
    state and config folders, so no service of anyone else's is found or touched. Remove
    the runtime folder with `end_private_user()`."""
    import os
    import tempfile

    runtime = tempfile.mkdtemp(prefix="flb-", dir="/tmp")  # short: the socket lives there
    os.environ.update({"XDG_RUNTIME_DIR": runtime, "XDG_STATE_HOME": str(tmp / "state"),
                       "XDG_CONFIG_HOME": str(tmp / "config"), "FRESHLINE_AUTOWATCH": "0"})
    for key in ("CI", "PYTEST_CURRENT_TEST"):
        os.environ.pop(key, None)


def end_private_user() -> None:
    """Stop the bench's service, if one runs, and remove its runtime folder."""
    import os
    import shutil

    from freshline.interfaces import autostart

    autostart.stop()
    shutil.rmtree(os.environ["XDG_RUNTIME_DIR"], ignore_errors=True)


def watched(root: Path) -> str | None:
    """How the service holds the workspace at `root` (None: not at all, or no service)."""
    from freshline.interfaces import serviceclient

    answer = serviceclient.ask({"op": "list"}, timeout=30)
    rows = answer["data"] if answer else []
    return next((w["state"] for w in rows if w["workspace"] == str(root)), None)


def start_service(*roots: Path, timeout: float = 600) -> None:
    """Start the service (the bench's user's) watching `roots`, and wait until it answers
    http hooks and watches each."""
    from freshline.interfaces import autostart, serviceclient

    autostart.spawn([str(r) for r in roots])
    pid_file = Path(serviceclient.runtime_dir(), serviceclient.HOOKS_PID_NAME)
    deadline = time.monotonic() + timeout
    while not (pid_file.exists() and all(watched(r) == "watching" for r in roots)):
        if time.monotonic() > deadline:
            raise SystemExit("bench: the service did not come up")
        time.sleep(0.05)


def service_cpu(pid: int) -> float:
    """CPU seconds the service's threads ran so far (nanoseconds, from /proc)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total / 1e9


def post(url: str, body: str) -> Run:
    """One http hook as Claude Code posts it; its CPU time is the service's."""
    import http.client
    from urllib.parse import urlsplit

    from freshline.interfaces import autostart

    parts = urlsplit(url)
    pid = autostart.running() or 0
    before = service_cpu(pid)
    start = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request("POST", f"{parts.path}?{parts.query}", body.encode(),
                     {"Content-Type": "application/json"})
        reply = conn.getresponse()
        text = reply.read().decode()
    finally:
        conn.close()
    wall = time.perf_counter() - start
    if reply.status != 200:
        raise SystemExit(f"bench: the service answered {reply.status}: {text[:200]}")
    return Run(wall, service_cpu(pid) - before, text)
