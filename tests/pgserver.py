"""A real PostgreSQL server for the suite: initdb in a temp dir, a Unix socket there, run
as an unprivileged user when the suite runs as root (initdb refuses root), stopped (and
the dir removed) at the end. One schema per test keeps tests apart on one server."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

SUPERUSER = "freshline"
DATABASE = "freshline"
RUN_AS = "nobody"  # the unprivileged user the server runs as when we are root
SERVER_OPTIONS = (
    "-c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    " -c max_connections=300 -c shared_buffers=16MB"
)


def find_bindir() -> Path | None:
    """The directory of PostgreSQL's server binaries (initdb, pg_ctl, postgres): the
    newest /usr/lib/postgresql/N/bin (Debian's postgresql-N), else the one `initdb` on
    PATH resolves to; FRESHLINE_PG_BIN overrides."""
    candidates = [os.environ.get("FRESHLINE_PG_BIN", "")]
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted(versions, key=lambda p: int(Path(p).parent.name), reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).resolve().parent))
    for candidate in filter(None, candidates):
        bindir = Path(candidate)
        if all((bindir / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


class PgServer:
    """One PostgreSQL server in a temp dir, reached on a Unix socket there."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self._user = RUN_AS if os.geteuid() == 0 else None
        # The unprivileged user must reach the dir: /tmp, whatever TMPDIR says (and a short
        # path: a Unix socket's path holds at most 107 bytes).
        parent = "/tmp" if self._user else None
        self.dir = Path(tempfile.mkdtemp(prefix="freshline-pg-", dir=parent))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self._schemas = itertools.count(1)
        if self._user:
            entry = pwd.getpwnam(self._user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self._user:
            command = ["runuser", "-u", self._user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.dir)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.strip()}\n{log}")

    def start(self) -> PgServer:
        """initdb, then start the server and wait for it to accept connections."""
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust",
                  "--no-locale", "-E", "UTF8", "--no-sync")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "-o", f"-k {self.dir} {SERVER_OPTIONS}", "start")
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        return self

    def url(self, database: str = DATABASE, schema: str | None = None) -> str:
        """A URL of the server's socket; with `schema`, one whose search_path is it."""
        url = f"postgresql://{SUPERUSER}@/{database}?host={quote(str(self.dir), safe='')}"
        if schema:
            url += "&options=" + quote(f"-csearch_path={schema}", safe="")
        return url

    def new_schema(self, prefix: str = "t") -> str:
        """A fresh, empty schema: the URL of a store of its own."""
        import psycopg

        name = f"{prefix}{next(self._schemas)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return self.url(schema=name)

    def stop(self) -> None:
        """Stop the server at once and remove its dir (no process left behind)."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def bench_server(program: str) -> PgServer:
    """A started server for a bench script; without PostgreSQL's binaries the script
    exits saying what to install."""
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit(f"{program}: PostgreSQL server binaries not found (apt-get install "
                         "postgresql-15)")
    return PgServer(bindir).start()
