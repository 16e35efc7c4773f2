"""`Materializer.ensure`: bring every document of a project to a snapshot, single-flight.

Within a process, runs are single-flight per project: a caller whose revision is covered
by a run in flight joins it and gets the very same result object; a caller with a newer
revision starts its own run alongside, so a document created after the older run began
is not missed. Across runs, projects and processes, a per-source flock serialises the
conversion of one file, and whoever takes it second re-probes and finds it done.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import TYPE_CHECKING

from freshline.errors import UsageError, WorkspaceError
from freshline.materialize.converters import Converter, Limits, converter_for
from freshline.materialize.locks import prune_locks, source_lock
from freshline.materialize.snapshots import FailureMarker, SnapshotHeader, SnapshotStore, utc_now
from freshline.materialize.status import DocStatus, Probe, probe
from freshline.materialize.worker import MIB, VANISHED, Cause, Job, Outcome, WorkerPool
from freshline.store.records import FileKind, IndexEntry
from freshline.withholding import Withholder

if TYPE_CHECKING:  # threads load with the first conversion (a hook's first call has none)
    from concurrent.futures import Future, ThreadPoolExecutor

SETTLED = frozenset({DocStatus.READY, DocStatus.FAILED, DocStatus.DELETED})
MAX_BACKOFF_S = 3600.0  # the longest wait before a transient failure is tried again
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


@dataclass(frozen=True)
class MaterializeSettings:
    """Worker pool size and the limits every conversion runs under."""

    workers: int = 2  # conversions in parallel
    timeout_s: float = 60.0  # per document
    memory_mb: int = 1024  # address space of a worker
    max_unpacked_mb: int = 256  # zip-based formats: declared uncompressed total
    max_rows: int = 500  # spreadsheets: rows shown per sheet
    idle_s: float = 30.0  # a warm worker idle this long is stopped after a run
    # A transient failure (see worker.Cause) waits this long before the next try, doubling
    # with each failure in a row; a killed or timed-out conversion sticks after
    # `load_attempts` tries, one that did not fit on the disk never does.
    retry_backoff_s: float = 30.0
    load_attempts: int = 3

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            zero_ok = name in ("idle_s", "retry_backoff_s")  # 0: at once
            if value < 0 or (value == 0 and not zero_ok):
                raise UsageError(f"materialize setting {name} must be positive, not {value}")

    def limits(self) -> Limits:
        """The limits converters check themselves."""
        return Limits(max_unpacked_bytes=self.max_unpacked_mb * MIB, max_rows=self.max_rows)


@dataclass(frozen=True)
class Progress:
    """One step of a run: a conversion starting (finished=False) or ending."""

    done: int  # conversions finished so far in this run
    total: int  # conversions this run attempts
    path: str
    finished: bool
    reason: str | None = None  # the failure reason, when a finished conversion failed


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class MaterializeResult:
    """What a run established; every caller that joined it gets this same object."""

    project: str
    revision: int  # the revision whose sources this run covered
    complete: bool  # every document is ready or failed for its live version
    snapshots: dict[str, Path]  # usable snapshots (ready, or stale after a failed re-parse)
    failures: dict[str, str]  # path -> reason, for the live version of the document
    converted: list[str]  # documents this run sent to a worker (successes and failures)
    statuses: dict[str, DocStatus] = field(default_factory=dict)


@dataclass(frozen=True)
class RunInfo:
    """A run in flight, for status displays and tests."""

    project: str
    revision: int
    callers: int  # the caller that started it plus those that joined


def _future() -> Future[MaterializeResult]:
    from concurrent.futures import Future

    return Future()


@dataclass
class _Run:
    revision: int
    retry_failed: bool
    upgrade: bool = False  # also make again what an older converter version made
    future: Future[MaterializeResult] = field(default_factory=_future)
    callers: int = 1
    listeners: list[ProgressFn] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0
    total: int = 0

    def covers(self, revision: int, retry_failed: bool, upgrade: bool = False) -> bool:
        return (self.revision >= revision and (self.retry_failed or not retry_failed)
                and (self.upgrade or not upgrade))

    def emit(self, path: str, finished: bool, reason: str | None = None) -> None:
        with self.lock:
            self.done += finished
            event = Progress(self.done, self.total, path, finished, reason)
            listeners = list(self.listeners)
        for listener in listeners:
            listener(event)


class Materializer:
    """Converts a workspace's documents into snapshots under `<data_dir>/snapshots/`."""

    def __init__(
        self, root: Path, data_dir: Path, settings: MaterializeSettings | None = None,
        withholder: Withholder | None = None,
    ) -> None:
        self.root = root
        self.data_dir = data_dir
        self.settings = settings or MaterializeSettings()
        self.withholder = withholder or Withholder()  # snapshots never store a secret
        self.store = SnapshotStore(data_dir)
        self.pool = WorkerPool(
            self.settings.workers, self.settings.timeout_s, self.settings.memory_mb
        )
        self._runs: dict[str, list[_Run]] = {}
        self._lock = threading.Lock()
        self._background: ThreadPoolExecutor | None = None

    def __enter__(self) -> Materializer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker for good; conversions in progress are cancelled (no marker)."""
        self.pool.close()
        with self._lock:
            background, self._background = self._background, None
        if background is not None:
            background.shutdown(wait=True, cancel_futures=True)

    def submit(
        self,
        project: str,
        revision: int,
        sources: Sequence[IndexEntry],
        retry_failed: bool = False,
        progress: ProgressFn | None = None,
    ) -> Future[MaterializeResult]:
        """Run `ensure` on a background thread; the future holds its result or error."""
        with self._lock:
            if self._background is None:
                from concurrent.futures import ThreadPoolExecutor

                self._background = ThreadPoolExecutor(4, thread_name_prefix="freshline-background")
            return self._background.submit(
                self.ensure, project, revision, list(sources), retry_failed, progress
            )

    def probe(self, path: str, entry: IndexEntry | None) -> Probe:
        """The status of one document against its index entry (cheap: no parsing)."""
        return probe(self.store, self.root, path, entry)

    def for_reading(
        self, path: str, entry: IndexEntry | None, progress: ProgressFn | None = None,
        waiting: bool = True,
    ) -> Probe:
        """The status of a document about to be read: one converted by an older version of
        its converter, and (`waiting`) one not converted yet or changed since, is converted
        now (this document alone, single-flight): a reader never waits for its project."""
        found = self.probe(path, entry)
        due = waiting and found.status in (DocStatus.PENDING, DocStatus.STALE)
        if entry is not None and (due or found.older is not None):
            self.ensure(f"read:{path}", 0, [entry], progress=progress, upgrade=True)
            found = self.probe(path, entry)
        return found

    def probe_all(self, sources: Sequence[IndexEntry]) -> dict[str, Probe]:
        """The status of every document among `sources` (for `freshline status`)."""
        return {e.path: self.probe(e.path, e) for e in _documents(sources)}

    def prune(self, keep: Sequence[str], dry_run: bool = False) -> list[Path]:
        """Remove snapshots, markers and locks of documents not in `keep` (out of scope);
        `dry_run`: only list them."""
        return [*self.store.prune(keep, dry_run), *prune_locks(self.data_dir, keep, dry_run)]

    def in_flight(self, project: str) -> list[RunInfo]:
        """The runs of a project in progress now."""
        with self._lock:
            runs = list(self._runs.get(project, []))
        return [RunInfo(project, run.revision, run.callers) for run in runs]

    def ensure(
        self,
        project: str,
        revision: int,
        sources: Sequence[IndexEntry],
        retry_failed: bool = False,
        progress: ProgressFn | None = None,
        upgrade: bool = False,
    ) -> MaterializeResult:
        """Convert every document in `sources` whose snapshot is not ready for its live
        version and which has not already failed for it (unless `retry_failed`).

        `revision` is the project's epoch the sources were read at. A snapshot an older
        version of its converter made counts as ready unless `upgrade` (a reader's: see
        `for_reading`). Raises WorkspaceError for a source path that is absolute or climbs
        out of the root.
        """
        run, owner = self._join_or_start(project, revision, retry_failed, progress, upgrade)
        if not owner:
            return run.future.result()
        try:
            result = self._execute(project, sources, run)
        except BaseException as exc:
            run.future.set_exception(exc)
            raise
        else:
            run.future.set_result(result)
            return result
        finally:
            with self._lock:
                self._runs[project].remove(run)
                if not self._runs[project]:
                    del self._runs[project]
            self.pool.reap(self.settings.idle_s)

    def _join_or_start(
        self, project: str, revision: int, retry_failed: bool, progress: ProgressFn | None,
        upgrade: bool,
    ) -> tuple[_Run, bool]:
        with self._lock:
            runs = self._runs.setdefault(project, [])
            joined = next((r for r in runs if r.covers(revision, retry_failed, upgrade)), None)
            run = joined or _Run(revision, retry_failed, upgrade)
            if joined:
                joined.callers += 1
            else:
                runs.append(run)
            if progress is not None:
                run.listeners.append(progress)
            return run, joined is None

    def _execute(self, project: str, sources: Sequence[IndexEntry], run: _Run) -> MaterializeResult:
        documents = _documents(sources)
        for entry in documents:
            _check_relative(entry.path)
        found = self.probe_all(documents)
        todo = [e for e in documents if _wanted(found[e.path], run.retry_failed, run.upgrade)]
        run.total = len(todo)
        converted: list[str] = []
        if todo:
            from concurrent.futures import ThreadPoolExecutor

            workers = min(self.settings.workers, len(todo))
            with ThreadPoolExecutor(workers, thread_name_prefix="freshline-materialize") as pool:
                tasks = [(e, pool.submit(self._one, e, found[e.path], run)) for e in todo]
                for entry, task in tasks:
                    found[entry.path], attempted = task.result()
                    if attempted:
                        converted.append(entry.path)
        return _result(project, run.revision, found, converted)

    def _one(self, entry: IndexEntry, before: Probe, run: _Run) -> tuple[Probe, bool]:
        with source_lock(self.data_dir, entry.path):
            now = self.probe(entry.path, entry)
            converter = converter_for(entry.path)
            if converter is None or _settled_meanwhile(before, now, run.upgrade):
                return now, False
            run.emit(entry.path, finished=False)
            job = Job(converter, self.root, entry.path, self.settings.limits(),
                      self.withholder.allow_hardlinks)
            outcome = self.pool.run(job)
            if outcome.cancelled:
                return now, False
            after = self._record(entry, converter, outcome, now)
            run.emit(entry.path, finished=True, reason=after.reason)
            return after, True

    def _record(
        self, entry: IndexEntry, converter: Converter, outcome: Outcome, before: Probe
    ) -> Probe:
        path = entry.path
        if outcome.ok and outcome.fingerprint is not None:
            header = SnapshotHeader(
                path, outcome.fingerprint, converter.name, converter.version, utc_now()
            )
            try:
                withheld = self.withholder.text(outcome.text or "", path,
                                                noted_as=outcome.fingerprint)
                text = withheld.text
                snapshot = self.store.write_snapshot(header, text)
            except OSError as exc:
                cause = Cause.SPACE if exc.errno in _FULL else Cause.CONTENT
                outcome = Outcome(fingerprint=outcome.fingerprint, reason=_unwritable(exc),
                                  cause=cause)
            else:
                self.store.clear_marker(path)
                fresh = outcome.fingerprint == entry.blob
                return Probe(path, DocStatus.READY if fresh else DocStatus.STALE, snapshot)
        if outcome.reason == VANISHED:
            return Probe(path, DocStatus.DELETED)
        marker = FailureMarker(
            source=path,
            fingerprint=outcome.fingerprint or entry.blob,
            reason=outcome.reason or "conversion failed",
            converter=converter.name,
            version=converter.version,
            failed_at=utc_now(),
        )
        if outcome.cause is not Cause.CONTENT:
            marker = self._transient(marker, outcome.cause)
        self.store.write_marker(marker)  # best effort: the stale snapshot stays usable
        if marker.retry_at is not None:
            waiting = DocStatus.STALE if before.snapshot else DocStatus.PENDING
            return Probe(path, waiting, before.snapshot, retry_at=marker.retry_at)
        return Probe(path, DocStatus.FAILED, before.snapshot, marker.reason)

    def _transient(self, marker: FailureMarker, cause: Cause) -> FailureMarker:
        """The marker of a failure a later run may not repeat: tried again after a backoff
        that doubles per failure in a row; past `load_attempts`, a load failure sticks."""
        previous = self.store.read_marker(marker.source)
        attempts = 1
        if previous is not None and previous.retry_at is not None:
            same = previous.fingerprint == marker.fingerprint
            attempts = previous.attempts + 1 if same else 1
        if cause is Cause.LOAD and attempts >= self.settings.load_attempts:
            return replace(marker, reason=f"{marker.reason} ({attempts} attempts)",
                           attempts=attempts)
        wait = min(self.settings.retry_backoff_s * 2 ** (attempts - 1), MAX_BACKOFF_S)
        return replace(marker, retry_at=time.time() + wait, attempts=attempts)


def _documents(sources: Sequence[IndexEntry]) -> list[IndexEntry]:
    # Symbolic links are recorded, never followed, so never converted.
    return [e for e in sources if e.kind is FileKind.FILE and converter_for(e.path)]


def _settled_meanwhile(before: Probe, now: Probe, upgrade: bool) -> bool:
    # Another run converted it, failed it, saw it vanish or backed off from it while we
    # waited for the lock.
    failed_meanwhile = now.status is DocStatus.FAILED and before.status is not DocStatus.FAILED
    backed_off = now.retry_at is not None and now.retry_at != before.retry_at
    outdated = upgrade and now.older is not None
    ready = now.status is DocStatus.READY and not outdated
    return failed_meanwhile or backed_off or ready or now.status is DocStatus.DELETED


def _wanted(found: Probe, retry_failed: bool, upgrade: bool) -> bool:
    if found.status is DocStatus.READY:
        return upgrade and found.older is not None
    if found.status is DocStatus.FAILED:
        return retry_failed
    waited = found.retry_at is None or retry_failed or found.retry_at <= time.time()
    return waited and found.status in (DocStatus.PENDING, DocStatus.STALE)


def _check_relative(path: str) -> None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise WorkspaceError(f"document path escapes the workspace: {path}")


def _unwritable(exc: OSError) -> str:
    return f"could not write the snapshot ({exc.strerror or exc})"


def _result(
    project: str, revision: int, found: dict[str, Probe], converted: list[str]
) -> MaterializeResult:
    return MaterializeResult(
        project=project,
        revision=revision,
        complete=all(p.status in SETTLED for p in found.values()),
        snapshots={path: p.snapshot for path, p in found.items() if p.snapshot is not None},
        failures={path: p.reason or "failed" for path, p in found.items() if p.reason},
        converted=converted,
        statuses={path: p.status for path, p in found.items()},
    )
