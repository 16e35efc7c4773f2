"""The store's schema as an ordered list of migrations.

Each migration runs once, in order, inside one transaction, and bumps the store's schema
version (SQLite's `PRAGMA user_version`, PostgreSQL's bookkeeping table). Never edit a
migration that has shipped; append a new one. Both backends apply the same list: write
SQLite's dialect with type names in capitals and identifiers in lower case (the
PostgreSQL backend translates it, `dialect.py`): CREATE TABLE, ALTER TABLE ADD COLUMN,
CREATE INDEX, UPDATE all run on both.
Paths are stored as BLOBs (UTF-8 with surrogate escapes) so that file names that are
not valid UTF-8 round-trip exactly.
"""

from __future__ import annotations

from freshline.errors import StoreError

MIGRATIONS: list[tuple[str, str]] = [
    (
        "index, projects, change log, hints, meta",
        """
        CREATE TABLE files (
            path BLOB PRIMARY KEY,
            kind TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            dev INTEGER NOT NULL,
            blob TEXT NOT NULL,
            mode INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            properties TEXT NOT NULL DEFAULT '{}'
        ) WITHOUT ROWID;
        CREATE TABLE projects (
            name TEXT PRIMARY KEY,
            epoch INTEGER NOT NULL DEFAULT 0,
            compacted_through INTEGER NOT NULL DEFAULT 0,
            signature TEXT NOT NULL,
            patterns TEXT NOT NULL
        );
        CREATE TABLE changes (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            kind TEXT NOT NULL,
            path BLOB NOT NULL,
            old_path BLOB,
            detail TEXT
        );
        CREATE INDEX changes_by_epoch ON changes (project, epoch);
        CREATE TABLE hints (id INTEGER PRIMARY KEY, path BLOB NOT NULL);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    ),
]

MIGRATIONS.append(
    (
        "sessions",
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            state TEXT NOT NULL,
            mode TEXT NOT NULL,
            created_at REAL NOT NULL,
            resumed_at REAL,
            cursor INTEGER,
            manifest_epoch INTEGER NOT NULL,
            dirty_key TEXT NOT NULL,
            held_key TEXT,
            manifest TEXT NOT NULL,
            needs_manifest INTEGER NOT NULL,
            resumed INTEGER NOT NULL,
            pending_docs TEXT NOT NULL DEFAULT '[]',
            announced_failures TEXT NOT NULL DEFAULT '{}',
            external_id TEXT UNIQUE,
            target TEXT
        );
        CREATE INDEX sessions_by_project ON sessions (project, state);
        """,
    )
)

MIGRATIONS.append(
    (
        "sessions: the live tree last written and the epoch its listing covered",
        """
        ALTER TABLE sessions ADD COLUMN live_tree TEXT;
        ALTER TABLE sessions ADD COLUMN live_epoch INTEGER
        """,
    )
)

MIGRATIONS.append(
    (
        "the read ledger, and the turns each session was delivered",
        """
        CREATE TABLE ledger (
            session TEXT NOT NULL,
            path BLOB NOT NULL,
            kind TEXT NOT NULL,
            blob TEXT NOT NULL,
            turn INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (session, path, kind)
        ) WITHOUT ROWID;
        CREATE INDEX ledger_by_path ON ledger (path);
        ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0
        """,
    )
)

MIGRATIONS.append(
    (
        "files: the line sketch of text files, the content evidence of a rename that edited",
        """
        ALTER TABLE files ADD COLUMN lines BLOB
        """,
    )
)

MIGRATIONS.append(
    (
        "sessions: the channel that opened them, last activity, a title",
        """
        ALTER TABLE sessions ADD COLUMN channel TEXT NOT NULL DEFAULT 'send';
        ALTER TABLE sessions ADD COLUMN active_at REAL;
        ALTER TABLE sessions ADD COLUMN title TEXT;
        UPDATE sessions SET channel = CASE
            WHEN external_id LIKE 'mcp:%' THEN 'mcp'
            WHEN external_id IS NOT NULL THEN 'hook'
            ELSE 'send' END;
        UPDATE sessions SET active_at = MAX(created_at, COALESCE(resumed_at, 0));
        CREATE INDEX sessions_by_activity ON sessions (state, active_at)
        """,
    )
)

MIGRATIONS.append(
    (
        "deliveries by token",
        """
        CREATE TABLE deliveries (
            token TEXT PRIMARY KEY,
            session TEXT NOT NULL,
            channel TEXT NOT NULL,
            created_at REAL NOT NULL,
            covers INTEGER NOT NULL,
            staged TEXT NOT NULL,
            state TEXT NOT NULL,
            basis TEXT,
            manifest INTEGER NOT NULL,
            detail TEXT NOT NULL DEFAULT '{}',
            settled_at REAL,
            how TEXT,
            note TEXT
        );
        CREATE INDEX deliveries_by_session ON deliveries (session, state)
        """,
    )
)

MIGRATIONS.append(
    (
        "users, their project grants and the sessions they own (freshline serve)",
        """
        CREATE TABLE users (
            name TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE grants (
            username TEXT NOT NULL,
            project TEXT NOT NULL,
            PRIMARY KEY (username, project)
        );
        CREATE TABLE session_owners (
            session TEXT PRIMARY KEY,
            owner TEXT NOT NULL
        );
        CREATE INDEX session_owners_by_owner ON session_owners (owner)
        """,
    )
)

MIGRATIONS.append(
    (
        "the files secrets were withheld from (freshline status flags them)",
        """
        CREATE TABLE withheld (
            path BLOB PRIMARY KEY,
            blob TEXT NOT NULL,
            kinds TEXT NOT NULL,
            at REAL NOT NULL
        ) WITHOUT ROWID
        """,
    )
)

MIGRATIONS.append(
    (
        "users: the subject of the OAuth access tokens that sign them in (freshline serve)",
        """
        ALTER TABLE users ADD COLUMN subject TEXT;
        CREATE UNIQUE INDEX users_by_subject ON users (subject)
        """,
    )
)

MIGRATIONS.append(
    (
        "failed sign-ins per client address, shared by every serve process",
        """
        CREATE TABLE auth_failures (
            address TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX auth_failures_by_address ON auth_failures (address, at);
        CREATE INDEX auth_failures_by_time ON auth_failures (at)
        """,
    )
)

MIGRATIONS.append(
    (
        "change log: the content before each change, rows per project, and the counts "
        "of what compaction dropped",
        """
        ALTER TABLE changes ADD COLUMN content_before TEXT;
        ALTER TABLE projects ADD COLUMN log_rows INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE projects ADD COLUMN forgotten_through INTEGER NOT NULL DEFAULT 0;
        UPDATE projects SET log_rows =
            (SELECT count(*) FROM changes WHERE changes.project = projects.name);
        UPDATE projects SET forgotten_through = compacted_through;
        CREATE TABLE change_groups (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            first_epoch INTEGER NOT NULL,
            last_epoch INTEGER NOT NULL,
            folder BLOB NOT NULL,
            counts TEXT NOT NULL,
            entry TEXT
        );
        CREATE INDEX change_groups_by_epoch ON change_groups (project, last_epoch)
        """,
    )
)


def check_version(location: str, version: int) -> None:
    """StoreError if the store was migrated by a newer freshline."""
    if version > len(MIGRATIONS):
        raise StoreError(
            f"{location}: schema version {version} is newer than this freshline knows "
            f"({len(MIGRATIONS)}); upgrade freshline"
        )


def statements(sql: str) -> list[str]:
    """A migration's statements (the store's SQL has no `;` inside a literal)."""
    return [s for s in sql.split(";") if s.strip()]
