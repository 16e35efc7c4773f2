"""`freshline service run`: the one process per user that watches every workspace used.

It holds `service.lock` in the user's private runtime folder for its whole life (a
second one hands its `--watch` workspaces to the first and exits 2), writes its record
(`service.json`: pid, start, version, port), and listens on two sockets from one thread
(`acceptor.py`): `service.sock` for the commands' questions (`requests.py`) and
127.0.0.1:<port> for Claude Code's http hooks (`httphooks.py`; `hooks.pid` says it
answers them, for the command hook that stands in when it does not). It watches every
workspace of the registry and every one a request names (`workspaces.py`), all on one
notifier, and logs to `service.log` in the user's state folder. SIGTERM, SIGINT or a
`stop` request end it: the sockets close, the watchers stop, the hook queues finish.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from freshline.interfaces import serviceclient
from freshline.interfaces.hook.core import Follow, FollowUp
from freshline.interfaces.service import httphooks, places, requests, secret
from freshline.interfaces.service.acceptor import Acceptor
from freshline.interfaces.service.hooks import HookService
from freshline.interfaces.service.registry import Registry
from freshline.interfaces.service.workspaces import Workspaces
from freshline.tracker.watcher import default_notifier
from freshline.tracker.watchlock import WatchLock, holder

LOG_KEEP_BYTES = 1 << 20  # a longer log is moved to service.log.1 when the service starts


class Log:
    """The service's log: one line each, with the time (best effort, never raises)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if path.stat().st_size > LOG_KEEP_BYTES:
                path.replace(path.with_name(path.name + ".1"))
        except OSError:
            pass

    def __call__(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {' '.join(message.split())}\n"
        with self._lock:
            try:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line)
            except OSError:
                pass


class Service:
    """The running service: its workspaces, hook queues and sockets."""

    def __init__(self, folder: Path, log: Log) -> None:
        self.folder = folder
        self.log = log
        self.started = time.time()
        self.notifier = default_notifier()
        self.hooks = HookService(self._follow, settle=lambda root: self.workspaces.settled(root))
        self.workspaces = Workspaces(self.notifier, self.hooks, Registry(), log)
        self.address: secret.HookAddress | None = None
        self.http_serving = False
        self._stopping = threading.Event()
        self._acceptor: Acceptor | None = None

    def facts(self) -> dict[str, Any]:
        """What `service status` shows of the service itself."""
        return {"pid": os.getpid(), "version": serviceclient.version(),
                "started": self.started, "uptime_s": round(time.time() - self.started, 1),
                "port": self.address.port if self.address else None,
                "http": self.http_serving, "notifier": type(self.notifier).__name__,
                "log": str(self.log.path), "workspaces": len(self.workspaces.listing())}

    def stop(self) -> None:
        """End the service (the main thread does the rest)."""
        self._stopping.set()

    def _follow(self, follow: FollowUp) -> None:
        """What a hook answer asks for: watch its workspace, convert its documents."""
        if follow.kind is Follow.WATCH:
            self.workspaces.watch(follow.root)
        else:
            self.hooks.warm.manager(follow.root).convert_pending()

    def listeners(self) -> list[tuple[socket.socket, Any]]:
        """The service's socket and, when its port is free, the http hooks' one."""
        path = self.folder / serviceclient.SOCKET_NAME
        path.unlink(missing_ok=True)  # a killed service's: the lock says we are alone
        local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        local.bind(str(path))
        os.chmod(path, 0o600)
        local.listen(64)
        found: list[tuple[socket.socket, Any]] = [(local, lambda c: requests.serve(c, self))]
        self.address = secret.ensure()
        web = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A killed service's connections linger in TIME_WAIT: its successor binds all the
        # same (a port another process listens on is still refused).
        web.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            web.bind((secret.HOST, self.address.port))
            web.listen(64)
        except OSError as exc:
            web.close()
            self.log(f"http hooks not answered: port {self.address.port}: {exc.strerror}; "
                     "the command hooks stand in")
            return found
        self.http_serving = True
        return [*found, (web, lambda c: httphooks.serve(c, self))]

    def start(self, roots: list[Path]) -> None:
        """Listen, write the records, and watch `roots` and the registry's workspaces."""
        self._acceptor = Acceptor(self.listeners())
        places.write_private(self.folder / serviceclient.RECORD_NAME, _json(self.facts()))
        if self.http_serving:
            places.write_private(self.folder / serviceclient.HOOKS_PID_NAME, f"{os.getpid()}\n")
        self._acceptor.start()
        self.log(f"started (pid {os.getpid()}, {type(self.notifier).__name__})")
        threading.Thread(target=self._restore, args=(roots,), daemon=True).start()

    def run(self, roots: list[Path]) -> None:
        """Serve until stopped."""
        self.start(roots)
        try:
            self._stopping.wait()
        finally:
            self.close()

    def close(self) -> None:
        """Stop answering (the http hooks first: their stand-in answers from then on),
        stop every watcher, finish the hook queues, remove the records."""
        (self.folder / serviceclient.HOOKS_PID_NAME).unlink(missing_ok=True)
        if self._acceptor is not None:
            self._acceptor.close()
        (self.folder / serviceclient.SOCKET_NAME).unlink(missing_ok=True)
        self.workspaces.close()
        self.hooks.close()
        self.notifier.close()
        (self.folder / serviceclient.RECORD_NAME).unlink(missing_ok=True)
        self.log("stopped")

    def _restore(self, roots: list[Path]) -> None:
        for root in roots:
            self.workspaces.watch(root)
        self.workspaces.restore()


def _json(data: dict[str, Any]) -> str:
    import json

    return json.dumps(data, sort_keys=True) + "\n"


def run(roots: list[Path]) -> int:
    """Run the service until stopped; 2 when another one runs (it is given `roots`)."""
    folder = Path(serviceclient.runtime_dir())
    if not serviceclient.private(str(folder)):
        sys.stderr.write(f"error: {folder} is not this user's alone; the service needs a "
                         "folder nobody else can enter\n")
        return 1
    lock = WatchLock(folder / serviceclient.LOCK_NAME)
    if not lock.acquire():
        for root in roots:
            serviceclient.ask({"op": "watch", "root": str(root)})
        pid = holder(folder / serviceclient.LOCK_NAME)
        sys.stderr.write(f"error: the service is already running (pid {pid})\n")
        return 2
    service = Service(folder, Log(places.log_path()))
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    signal.signal(signal.SIGINT, lambda *_: service.stop())
    try:
        service.run(roots)
    finally:
        lock.release()
    return 0
