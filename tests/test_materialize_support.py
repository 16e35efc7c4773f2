"""Shared helpers of the materializer tests: a workspace with the fake converters
registered, and ways to watch worker processes and threads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from freshline.materialize import (
    Materializer,
    MaterializeResult,
    MaterializeSettings,
    register,
    unregister,
)
from freshline.store.records import IndexEntry
from tests import docgen
from tests.conftest import process_state
from tests.docgen import entry

WORKER_CODE = "freshline.materialize.worker import serve"


class Env:
    """A workspace root, its data dir, and the log/gate files of the fake converter."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / ".freshline"
        self.log = root.parent / "conversions.log"
        self.gate = root.parent / "gate"
        self.materializers: list[Materializer] = []

    def materializer(self, **settings: object) -> Materializer:
        merged: dict[str, object] = {"workers": 2, "timeout_s": 30.0, **settings}
        m = Materializer(self.root, self.data, MaterializeSettings(**merged))  # type: ignore[arg-type]
        self.materializers.append(m)
        return m

    def write(self, path: str, text: str) -> IndexEntry:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(text)
        return entry(self.root, path)

    def conversions(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []

    def open_gate(self) -> None:
        self.gate.touch()

def materialize_env(tmp_path: Path) -> Iterator[Env]:
    """A workspace with the misbehaving converters registered; checks no worker is left."""
    root = tmp_path / "ws"
    root.mkdir()
    environment = Env(root)
    fakes = [
        docgen.FakeConverter(environment.log, environment.gate),
        docgen.HangConverter(),
        docgen.CrashConverter(),
        docgen.ExitConverter(),
        docgen.HogConverter(),
    ]
    for converter in fakes:
        register(converter)
    earlier = set(worker_children())  # left by other tests: not this test's business
    yield environment
    for m in environment.materializers:
        m.close()
    for converter in fakes:
        unregister(converter)
    assert set(worker_children()) <= earlier

def worker_children() -> list[int]:
    """Live worker processes whose parent is this test process."""
    found = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and WORKER_CODE in cmdline:
            found.append(pid)
    return found

def running(pid: int) -> bool:
    return process_state(pid) not in ("", "Z", "X")

def in_thread(call: Callable[[], MaterializeResult]) -> tuple[threading.Thread, list]:
    box: list = []
    thread = threading.Thread(target=lambda: box.append(call()))
    thread.start()
    return thread, box
