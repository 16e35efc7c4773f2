"""Conversions in worker processes, so a hostile or broken file can fail but never hang,
crash or exhaust freshline itself.

A worker is a plain `python -c` subprocess (no re-import of the caller's `__main__`, no
fork of a threaded parent) that talks pickles over a socket pair and stays warm between
jobs. It limits its own address space (RLIMIT_AS) when it starts; the parent enforces
the time limit by killing a worker that overruns, and each job also arms an alarm in the
worker so an orphaned one cannot outlive its job by much. A worker that timed out,
crashed or ran out of memory is discarded and the next job gets a fresh one.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from freshline.access import SPECIAL_REASON, hardlink_reason
from freshline.beneath import Kind, Opened, open_beneath
from freshline.errors import FreshlineError, WorkspaceError
from freshline.materialize.converters.base import (
    ConversionFailed,
    Converter,
    Limits,
    allocation_failed,
    first_line,
)
from freshline.tracker.hashing import blob_id_fd

MIB = 1024 * 1024
VANISHED = "source file is gone"
_CHILD = "from freshline.materialize.worker import serve; serve()"


class Cause(StrEnum):
    """Why a conversion failed, which decides whether a later run tries it again."""

    CONTENT = "content"  # the document itself: the failure sticks to its fingerprint
    LOAD = "load"  # timed out, or killed by SIGKILL (the OOM killer): a busy machine
    SPACE = "space"  # the snapshot did not fit on the disk


@dataclass(frozen=True)
class Job:
    """One document to convert: file `rel` of the workspace `root`."""

    converter: Converter
    root: Path
    rel: str
    limits: Limits
    allow_hardlinks: bool = False  # convert a file with more than one hard link


@dataclass(frozen=True)
class Outcome:
    """What a conversion produced: text, or a failure reason."""

    text: str | None = None
    fingerprint: str | None = None  # git blob id of the bytes the worker converted
    reason: str | None = None
    fatal: bool = False  # the worker must not be reused (out of memory)
    cancelled: bool = False  # the pool was closed first: nothing is known about the file
    cause: Cause = Cause.CONTENT  # for a failure: whether trying again later may succeed

    @property
    def ok(self) -> bool:
        """True when the conversion produced text."""
        return self.text is not None


def _cancelled() -> Outcome:
    return Outcome(reason="cancelled: the materializer was closed", cancelled=True)


def _unloadable(exc: Exception) -> Outcome:
    problem = f"{type(exc).__name__}: {first_line(exc)}"
    return Outcome(reason=f"could not load the converter ({problem})")


def convert_here(job: Job, memory_mb: int, folder: Path) -> Outcome:
    """Run a job in this process and turn every failure into an Outcome.

    The document is opened beneath the workspace through no link (`beneath`), checked
    (a regular file, one link unless allowed) and converted from that descriptor: the
    converter reads the very file checked, under its own name in the private `folder`
    (`_named`)."""
    try:
        opened = open_beneath(job.root, job.rel, follow=False)
    except FileNotFoundError:
        return Outcome(reason=VANISHED)
    except (OSError, WorkspaceError) as exc:
        return Outcome(reason=f"unreadable ({getattr(exc, 'strerror', None) or exc})")
    with opened:
        refused = _refused(opened, job.allow_hardlinks)
        if refused is not None:
            return refused
        try:
            fingerprint = blob_id_fd(opened.fd)
        except OSError as exc:
            return Outcome(reason=f"unreadable ({exc.strerror or exc})")
        with _named(opened.fd, job.rel, folder) as path:
            return _converted(job, path, fingerprint, memory_mb)


def _refused(opened: Opened, allow_hardlinks: bool) -> Outcome | None:
    """Why an opened document is not converted, or None."""
    if opened.kind is Kind.MISSING or opened.kind is Kind.FOLDER:
        return Outcome(reason=VANISHED)
    if opened.kind is Kind.SPECIAL:
        return Outcome(reason=SPECIAL_REASON)
    links = opened.info.st_nlink if opened.info is not None else 1
    if links > 1 and not allow_hardlinks:  # converting it would read what its other names hold
        return Outcome(reason=hardlink_reason(links))
    return None


@contextmanager
def _named(fd: int, rel: str, folder: Path) -> Iterator[Path]:
    """A path with the document's own name that opens the descriptor `fd` (a link in the
    private `folder` to this process's `/proc/<pid>/fd/<fd>`): libraries open a path (and
    some judge it by its extension), and this one cannot be swapped for another file."""
    proc = Path(f"/proc/{os.getpid()}/fd/{fd}")
    link = folder / (rel.rsplit("/", 1)[-1] or "document")
    link.unlink(missing_ok=True)  # left by a job of this worker that failed to clean up
    try:
        link.symlink_to(proc if proc.exists() else f"/dev/fd/{fd}")
        yield link
    finally:
        link.unlink(missing_ok=True)


def _converted(job: Job, path: Path, fingerprint: str, memory_mb: int) -> Outcome:
    try:
        return Outcome(text=job.converter.convert(path, job.limits), fingerprint=fingerprint)
    except ConversionFailed as exc:
        return Outcome(fingerprint=fingerprint, reason=str(exc))
    except Exception as exc:  # a converter bug or a library choking: report, never raise
        if allocation_failed(exc):
            return Outcome(fingerprint=fingerprint, reason=out_of_memory(memory_mb), fatal=True)
        return Outcome(fingerprint=fingerprint, reason=f"{type(exc).__name__}: {first_line(exc)}")


def out_of_memory(memory_mb: int) -> str:
    """The failure reason for a conversion that hit the memory limit."""
    return f"out of memory (limit {memory_mb} MiB)"


def serve() -> None:
    """The worker's main loop: `python -c ... FD MEMORY_MB TIMEOUT_S FOLDER` (see _Worker)."""
    from multiprocessing.connection import Connection

    fd, memory_mb, timeout_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    folder = Path(sys.argv[4])
    # Ctrl-C reaches the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    sys.path[:] = conn.recv()  # the parent's, so converters it registered unpickle here
    if memory_mb:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = memory_mb * MIB if hard == resource.RLIM_INFINITY else min(hard, memory_mb * MIB)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the parent is gone (killed: it removes nothing)
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            return
        except MemoryError:
            conn.send(Outcome(reason=out_of_memory(memory_mb), fatal=True))
            return
        except Exception as exc:  # the job did not unpickle: a converter we cannot import
            conn.send(_unloadable(exc))
            continue
        signal.alarm(int(timeout_s) + 5)  # outlive a dead parent's time limit by little
        outcome = convert_here(job, memory_mb, folder)
        signal.alarm(0)
        conn.send(outcome)


class _Worker:
    def __init__(self, memory_mb: int, timeout_s: float) -> None:
        # Loaded with the first worker: a session that converts nothing never needs them.
        import socket
        import tempfile
        from multiprocessing.connection import Connection

        # The worker's private folder for its documents' names, made and removed here: a
        # worker killed mid-job (a time limit, the OOM killer) cannot clean up after itself.
        self.folder = tempfile.mkdtemp(prefix="freshline-doc-")
        mine, theirs = socket.socketpair()
        args = [str(theirs.fileno()), str(memory_mb), str(timeout_s), self.folder]
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *args],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self.conn = Connection(mine.detach())
        self.conn.send(list(sys.path))
        self.idle_since = time.monotonic()

    @property
    def pid(self) -> int:
        return self.process.pid

    def run(self, job: Job, timeout_s: float) -> Outcome:
        try:
            self.conn.send(job)
        except OSError:
            return self._lost()
        except Exception as exc:  # the job did not pickle; nothing reached the worker
            return _unloadable(exc)
        from multiprocessing.connection import wait

        ready = wait([self.conn], timeout_s)
        if ready:
            try:
                outcome: Outcome = self.conn.recv()
                return outcome
            except (EOFError, OSError):
                return self._lost()
        self.stop()
        return Outcome(reason=f"timed out after {timeout_s:g} s", fatal=True, cause=Cause.LOAD)

    def _lost(self) -> Outcome:
        self.stop()
        code = self.process.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        # SIGKILL comes from outside (the OOM killer, an operator): another try may pass.
        cause = Cause.LOAD if code == -signal.SIGKILL else Cause.CONTENT
        return Outcome(reason=f"worker crashed ({how})", fatal=True, cause=cause)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()

    def stop(self) -> None:
        import shutil

        self.kill()
        self.process.wait()
        self.conn.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class WorkerPool:
    """Up to `size` worker processes converting in parallel, started on demand."""

    def __init__(self, size: int = 2, timeout_s: float = 60.0, memory_mb: int = 1024) -> None:
        self.size, self.timeout_s, self.memory_mb = max(1, size), timeout_s, memory_mb
        self._slots = threading.BoundedSemaphore(self.size)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False

    def run(self, job: Job) -> Outcome:
        """Convert one document in a worker; blocks while all workers are busy.

        After close() the outcome is `cancelled`, also for a job that was running.
        """
        with self._slots:
            worker = self._checkout()
            if worker is None:
                return _cancelled()
            try:
                outcome = worker.run(job, self.timeout_s)
            finally:
                with self._lock:
                    self._busy.discard(worker)
                    closed = self._closed
            if closed or outcome.fatal or not worker.alive():
                worker.stop()
            else:
                self._checkin(worker)
            return _cancelled() if closed else outcome

    def pids(self) -> list[int]:
        """Process ids of the live workers (idle and busy)."""
        with self._lock:
            workers = [*self._idle, *self._busy]
        return [w.pid for w in workers if w.alive()]

    def reap(self, idle_s: float = 0.0) -> None:
        """Stop workers idle for at least `idle_s` seconds."""
        cutoff = time.monotonic() - idle_s
        with self._lock:
            old = [w for w in self._idle if w.idle_since <= cutoff]
            self._idle = [w for w in self._idle if w.idle_since > cutoff]
        for worker in old:
            worker.stop()

    def close(self) -> None:
        """Stop every worker for good; a busy one is killed and its job cancelled."""
        with self._lock:
            self._closed = True
            idle, busy, self._idle = self._idle, list(self._busy), []
        for worker in idle:
            worker.stop()
        for worker in busy:
            worker.kill()  # the thread running its job reaps it

    def _checkout(self) -> _Worker | None:
        with self._lock:
            while self._idle and not self._closed:
                worker = self._idle.pop()
                if worker.alive():
                    self._busy.add(worker)
                    return worker
                worker.stop()
            if self._closed:
                return None
        try:
            worker = _Worker(self.memory_mb, self.timeout_s)
        except OSError as exc:
            raise FreshlineError(f"could not start a conversion worker ({exc})") from exc
        with self._lock:
            if not self._closed:
                self._busy.add(worker)
                return worker
        worker.stop()  # closed while it started
        return None

    def _checkin(self, worker: _Worker) -> None:
        worker.idle_since = time.monotonic()
        with self._lock:
            self._idle.append(worker)
