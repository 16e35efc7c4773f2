"""The service starts itself, as Watchman's client starts its server.

A command that uses a workspace (`scan`, `send`, `status` done in-process, a hook call, a
chat, an MCP server…) tells the service to watch it; with no service running it starts
one (`freshline service run --watch ROOT`, detached), which watches that workspace and
every other one in the user's registry. Two commands starting one at once both spawn
it: the second hands its workspace to the first over the socket and exits. A service
that was killed leaves its record behind: the next command that starts one says so once,
on stderr.

On by default (`[workspace] autowatch = true`) and off in CI and under pytest, unless
`FRESHLINE_AUTOWATCH=1` asks for it (`FRESHLINE_AUTOWATCH=0` turns it off anywhere); the
service itself never watches a workspace whose config says `autowatch = false`. Answers
never depend on it: a command with no service to ask flushes itself.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import Config
from freshline.interfaces import serviceclient
from freshline.interfaces.service.places import log_path
from freshline.tracker.watchlock import holder

if TYPE_CHECKING:
    import subprocess

ENV = "FRESHLINE_AUTOWATCH"
_FALSE = {"", "0", "false", "no", "off"}
STOP_WAIT_S = 20.0


def enabled(config: Config) -> bool:
    """Whether commands in this workspace start the service: `$FRESHLINE_AUTOWATCH` if
    set, else off in CI (`$CI`) and under pytest, else `[workspace] autowatch`."""
    forced = os.environ.get(ENV)
    if forced is not None:
        return forced.strip().lower() not in _FALSE
    if os.environ.get("CI") or "PYTEST_CURRENT_TEST" in os.environ:
        return False
    return config.workspace.autowatch


def tell(message: str) -> None:
    """Say something about the service on stderr (stdout may be a protocol's)."""
    sys.stderr.write(f"warning: {message}\n")


def ensure(config: Config, notice: Callable[[str], None] = tell) -> bool:
    """Have the service watch the workspace (starting the service if none runs) when
    autowatch is on; whether it was asked or started. Never raises: commands work
    without it, with full scans."""
    if not enabled(config):
        return False
    root = str(Path(config.root).resolve())
    answer = serviceclient.exchange({"op": "watch", "root": root})
    if answer is not None:  # a service answered (another store's refuses: no second one)
        return bool(isinstance(answer, dict) and answer.get("ok"))
    try:
        spawn([root])
    except OSError:
        return False
    if obituary():
        notice("the freshline service had stopped without a word (killed, or the machine "
               "restarted); started a new one")
    return True


def spawn(roots: Iterable[str]) -> subprocess.Popen[bytes]:
    """Start `freshline service run --watch ROOT…`, detached, its errors in its log, in
    the runtime folder found here (one removed before it starts is not replaced by
    another: it exits)."""
    import subprocess  # only when starting one

    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    watch = [word for root in roots for word in ("--watch", root)]
    env = os.environ | {serviceclient.RUNTIME_ENV: serviceclient.runtime_dir()}
    with log.open("ab") as errors:
        return subprocess.Popen(
            [sys.executable, "-m", "freshline", "service", "run", *watch], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
            start_new_session=True,  # not in the caller's process group: Ctrl-C there spares it
        )


def obituary() -> bool:
    """Whether the last service ended without removing its record (killed); the record
    is taken, so it is told once."""
    folder = Path(serviceclient.runtime_dir())
    record = folder / serviceclient.RECORD_NAME
    if holder(folder / serviceclient.LOCK_NAME) is not None or not record.exists():
        return False
    try:
        record.unlink()  # of two commands, one tells
    except FileNotFoundError:
        return False
    return True


def running() -> int | None:
    """The pid of the running service, or None."""
    return holder(Path(serviceclient.runtime_dir()) / serviceclient.LOCK_NAME)


def stop(timeout: float = STOP_WAIT_S) -> int | None:
    """Stop the service and wait until it let its lock go; its pid (None: none ran).
    TimeoutError when it is still there after `timeout` seconds."""
    import signal

    pid = running()
    if pid is None:
        return None
    deadline = time.monotonic() + timeout
    holder: int | None = pid
    while holder is not None:
        answer = serviceclient.exchange({"op": "stop"}, timeout)
        if not (isinstance(answer, dict) and answer.get("ok")) and holder:
            try:
                os.kill(holder, signal.SIGTERM)  # another version's service, or a deaf one
            except ProcessLookupError:
                pass
        # One a command started meanwhile may take the lock as this one lets it go: it
        # is stopped too, so no service runs once this returns.
        while (now := running()) == holder:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the service (pid {holder}) did not stop; stop it with `kill {holder}`")
            time.sleep(0.02)
        holder = now
    return pid
